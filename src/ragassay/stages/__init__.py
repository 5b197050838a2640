"""The pipeline's stages: one module each (generate, judge, check; remap and retrieve beside them),
all run by one engine (plan -> estimate -> run -> result)."""
