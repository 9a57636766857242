"""What the max-min kernels keep per resource, shared by :mod:`.maxmin` and
:mod:`.bottlenecks` (constants only; numba reads them at compile time)."""

NUMPY_ERRORS = {"error_model": "numpy"}  # float division by zero -> inf, no exception

#: resources (and finish times) within this relative distance of the minimum
#: are saturated (finish) together
TIE_TOL = 1e-12

# Per-resource state, split by how often it is touched. ``state``
# float64[R, 4] holds what every entry update reads and writes, one 32-byte
# row per resource (the rows of the resources a solve touches then mostly fit
# in L2); ``w_ref`` float64[R] the weight at its last exact summation (read
# by every freeze); ``cold`` float64[R, 2] what is used per resource only.
# Outside a fill RESID is the capacity minus the load of the active flows,
# each at its applied rate; a fill's set-up takes its flows' loads out (so it
# needs no branch on whether a resource was seen before), and each freeze puts
# a flow's load back at its new rate.
RESID = 0  # capacity left (during a fill: for the unfrozen flows)
W_HI = 1   # unfrozen weight W = hi + lo, kept with error-free two-sum
W_LO = 2   # updates: when big fractions leave, tiny ECMP ones keep their digits
COUNT = 3  # unfrozen flows crossing the resource
LEVEL = 0  # (cold) level computed in the current pass (-inf: saturated in it)
CAP = 1    # (cold) capacity
# Outside a fill W_HI = W_LO = COUNT = 0 for every resource.
