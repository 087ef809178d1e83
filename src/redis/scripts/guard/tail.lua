
-- Tail of a guarded script: the algorithm's body ran as `decide`; its answer is recorded, then returned.
local reply = decide()
record(guard_values + (reply[1] == 1 and 0 or 1))
return reply
