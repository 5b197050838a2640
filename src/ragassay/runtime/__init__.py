"""The runtime every LLM stage runs on: the engine (plan -> estimate -> run -> result, ``engine.py``),
the scaffold that gives a stage its backend and clients (``scaffold.py``), the output store with its
journal, index and lock (``store.py``, ``store_index.py``, ``key_locations.py``) and the plan's
packed keys (``plan_keys.py``). The stages themselves (generate, judge, check, ...) are in
``ragassay.stages``, one module each."""
