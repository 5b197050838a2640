"""One significance setting for every caller (compare, report, demo): the same comparison gives the
same p-values and intervals wherever it is printed.

A module of constants that imports nothing: ``ragassay compare --help`` shows them without
importing numpy and the rest of the metrics core.
"""

N_PERMUTATIONS = 10_000
N_BOOTSTRAP = 10_000
SEED = 0
