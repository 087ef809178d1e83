-- Head of a guarded script: the deny list of @upstash/ratelimit and the analytics events of
-- @upstash/core-analytics around an algorithm's script, in the same call (see src/redis/protected.rs).
-- The guard's arguments follow the algorithm's, which see KEYS and ARGV without them.
-- KEYS end with: the deny list set (`<prefix>:denyList:all`) when values are checked, then the events
-- bucket (`<prefix>:events:<hour>`) when events are recorded.
-- ARGV end with: the values to check; when events are recorded, the event if admitted and the event if
-- rate limited; then the number of values and '1' when events are recorded, else '0'.
local guard_argv, guard_keys = ARGV, KEYS
local guard_events = guard_argv[#guard_argv] == '1'
local guard_values = tonumber(guard_argv[#guard_argv - 1])
local guard_argc = 2 + guard_values + (guard_events and 2 or 0)
local guard_keyc = (guard_values > 0 and 1 or 0) + (guard_events and 1 or 0)
local guard_from = #guard_argv - guard_argc + 1
local events_key = guard_events and guard_keys[#guard_keys] or nil
local KEYS = {unpack(guard_keys, 1, #guard_keys - guard_keyc)}
local ARGV = {unpack(guard_argv, 1, guard_from - 1)}

-- Records the event ARGV[guard_from + index] in the hour's sorted set, as core-analytics's `ingest`;
-- returns Redis's error if it could not (never raised: a side effect does not decide).
local function record(index)
  if events_key then
    local done = redis.pcall('ZINCRBY', events_key, 1, guard_argv[guard_from + index])
    if type(done) == 'table' and done.err then
      return done.err
    end
  end
end

-- A value in the deny list answers {'denyList', flags} (1 for each value found) before anything is
-- counted or recorded: the caller records the event of the value it reports (a rare answer, whose event
-- is not worth sending with every request).
if guard_values > 0 then
  local deny_key = guard_keys[#guard_keys - guard_keyc + 1]
  local found = redis.pcall('SMISMEMBER', deny_key, unpack(guard_argv, guard_from, guard_from + guard_values - 1))
  -- A deny list of another type is a misconfiguration: an error naming the key, never an admission.
  if found.err then
    return redis.error_reply('CORRUPTSTATE ' .. #deny_key .. ' ' .. deny_key .. ' is no set of denied values: ' .. found.err)
  end
  for index = 1, guard_values do
    if found[index] == 1 then
      return {'denyList', found}
    end
  end
end

