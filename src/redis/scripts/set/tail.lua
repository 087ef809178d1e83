
-- Tail of the set script: each limit is decided at one time (Redis's, read once, unless the caller
-- sent its own) by its body, whose writes are queued (`queued`, see the prelude); a body's error
-- (corrupt state, CLOCKSKEW) is replied at once, with nothing written. Then the set admits when every
-- live limit admits (every limit, when all run dry): its limits that admit write their queued
-- writes; a set that denies writes nothing, so a denied request is counted by none of its limits.
-- Reply: each limit's reply, as its own script replies, in order.
local algorithms = {fixed_window = fixed_window, sliding_window = sliding_window, token_bucket = token_bucket, gcra = gcra}
local now = tonumber(set_argv[1]) or redis_micros()
local cost, count = set_argv[2], tonumber(set_argv[3])
local replies, writes, admits, dry = {}, {}, {}, {}
local live, next_key = false, 1
for limit = 1, count do
  local at = 3 + (limit - 1) * 7
  local dynamic = set_argv[at + 6] == '1'
  local last_key = next_key + tonumber(set_argv[at + 2]) - 1 + (dynamic and 1 or 0)
  KEYS = {unpack(set_keys, next_key, last_key)}
  ARGV = {now, set_argv[at + 3], set_argv[at + 4], set_argv[at + 5], cost, dynamic and '1' or nil}
  next_key = last_key + 1
  follow_keys()
  queued = {}
  local reply = algorithms[set_argv[at + 1]]()
  if reply.err then
    return reply
  end
  replies[limit], writes[limit], admits[limit] = reply, queued, reply[1] == 1
  dry[limit] = set_argv[at + 7] == '1'
  live = live or not dry[limit]
end
queued = nil
for limit = 1, count do
  if not admits[limit] and (not dry[limit] or not live) then
    return replies
  end
end
for limit = 1, count do
  if admits[limit] then
    for _, command in ipairs(writes[limit]) do
      redis.call(unpack(command))
    end
  end
end
return replies
