
-- Tail of a guarded script: the algorithm's body ran as `decide`; an error (corrupt state) is replied
-- as it is, with no event. The event of the answer is recorded, and a failure to record it (a key of
-- another type, anything) changes nothing that was decided: the reply is then wrapped as
-- {'eventFailed', Redis's error, the decision's reply}.
local reply = decide()
if reply.err then
  return reply
end
local failed = record(guard_values + (reply[1] == 1 and 0 or 1))
if failed then
  return {'eventFailed', failed, reply}
end
return reply
