-- Shared head of every edgelimit script. ARGV[1] is the caller's time in microseconds since the epoch,
-- or "" to read the Redis server's clock (for fleets whose clocks disagree).
local function now_micros()
  local caller = tonumber(ARGV[1])
  if caller then
    return caller
  end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

local function window_of(keys_from, index)
  local key = KEYS[index - keys_from + 1]
  if key == nil then
    error('edgelimit: window ' .. index .. ' is outside the keys sent (clocks more than a window apart)')
  end
  return key
end
