-- The common request of a sliding window, decided before the prelude (as in fast/fixed_window.lua):
-- the caller's time (ARGV[1]) or Redis's (ARGV[1] empty), neither a dynamic limit nor a lease (no
-- ARGV[6]), a whole cost from 1 to the limit, and both counters absent or written as the scripts write
-- counts (no sign, no leading zero, at most 15 digits). It is decided as the general way decides it,
-- and the reply is the two counts found, current and previous, alone, or with Redis's time {current,
-- previous, time}: the client knows the rest it sent, and decides on them (src/redis/backend.rs).
-- Anything else goes on to the prelude and the general way, which reads and checks each counter.
-- A counter's value as a count, 0 when absent; nil for anything the general way should look at.
local function fast_count(stored)
  if stored == false then
    return 0
  end
  if type(stored) == 'string' and #stored <= 15 and (stored == '0' or string.find(stored, '^[1-9]%d*$')) then
    return tonumber(stored)
  end
  return nil
end

local fast_clock = ARGV[1] == '' and redis.call('TIME')
local fast_now = fast_clock and fast_clock[1] * 1000000 + fast_clock[2] or tonumber(ARGV[1])
local fast_cost, fast_limit = tonumber(ARGV[5]), tonumber(ARGV[4])
if fast_now and ARGV[6] == nil and string.find(ARGV[5], '^[1-9]%d*$') and fast_cost <= fast_limit then
  local fast_window_ms, fast_ms = tonumber(ARGV[3]), math.floor(fast_now / 1000)
  local fast_window = math.floor(fast_ms / fast_window_ms)
  local fast_at = fast_window - tonumber(ARGV[2]) + 1
  local fast_current_key, fast_previous_key = KEYS[fast_at], KEYS[fast_at - 1]
  if fast_current_key and fast_previous_key then
    local current = fast_count(redis.pcall('GET', fast_current_key))
    local previous = fast_count(redis.pcall('GET', fast_previous_key))
    if current and previous then
      local weighted = math.floor((1 - (fast_ms % fast_window_ms) / fast_window_ms) * previous)
      if current + weighted + fast_cost <= fast_limit then
        redis.call('INCRBY', fast_current_key, ARGV[5])
        -- The counter outlives the next window's end, when it stops weighing, by LATE, 10000 ms: set
        -- when it expires a second sooner or more (as in fast/fixed_window.lua).
        local fast_ttl = (fast_window + 2) * fast_window_ms + 10000 - fast_ms
        if redis.call('PTTL', fast_current_key) < fast_ttl - 1000 then
          redis.call('PEXPIRE', fast_current_key, fast_ttl)
        end
      end
      if fast_clock then
        return {current, previous, fast_now}
      end
      return {current, previous}
    end
  end
end
