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
  local fast_window_ms = tonumber(ARGV[3])
  local fast_ms = math.floor(fast_now / 1000)
  local fast_at = math.floor(fast_ms / fast_window_ms) - tonumber(ARGV[2]) + 1
  local fast_current_key, fast_previous_key = KEYS[fast_at], KEYS[fast_at - 1]
  if fast_current_key and fast_previous_key then
    local current = fast_count(redis.pcall('GET', fast_current_key))
    local previous = fast_count(redis.pcall('GET', fast_previous_key))
    if current and previous then
      local weighted = math.floor((1 - (fast_ms % fast_window_ms) / fast_window_ms) * previous)
      if current + weighted + fast_cost <= fast_limit then
        redis.call('INCRBY', fast_current_key, ARGV[5])
        if redis.call('PTTL', fast_current_key) < 0 then
          redis.call('PEXPIRE', fast_current_key, fast_window_ms * 2 + 1000)
        end
      end
      return {current, previous}
    end
  end
end
