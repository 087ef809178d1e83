-- The common request of a sliding window, decided before the prelude (as in fast/fixed_window.lua):
-- the caller's time (ARGV[1]), neither a dynamic limit nor a lease (no ARGV[6]), a whole cost from 1
-- to the limit, and both counters absent or written as the scripts write counts (no sign, no leading
-- zero, at most 15 digits). It is decided as the general way decides it, and the reply is the two
-- counts found, current and previous, alone: the client knows the time, the window and the limit it
-- sent, and decides on them (src/redis/backend.rs). Anything else goes on to the prelude and the
-- general way, which reads and checks each counter.
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

local fast_now, fast_cost, fast_limit = tonumber(ARGV[1]), tonumber(ARGV[5]), tonumber(ARGV[4])
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
        -- The counter outlives the next window's end, when it stops weighing, by LATE, 10000 ms.
        redis.call('PEXPIRE', fast_current_key, (fast_window + 2) * fast_window_ms + 10000 - fast_ms)
      end
      return {current, previous}
    end
  end
end
