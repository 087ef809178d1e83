
-- Sliding window, with the keys, values and TTLs of @upstash/ratelimit: the current window's counter
-- plus the previous one weighted by how much of it the sliding window still covers. Unlike the peer,
-- the cost is checked against what is left and a denied request writes nothing.
-- Mirrors SlidingWindow::acquire in sliding_window.rs.
-- KEYS: counters of consecutive windows, KEYS[1] being window ARGV[2].
-- ARGV: now (µs or ""), window of KEYS[1], window length (ms), limit, cost.
-- ARGV[6] = '1' when the last key is the dynamic limit (see the prelude).
-- Reply: {allowed (0/1), now (µs), limit applied, window, current count before this request, previous count}.
local now = now_micros()
local keys_from, window_ms, limit, cost = tonumber(ARGV[2]), tonumber(ARGV[3]), capacity(tonumber(ARGV[4]), true), tonumber(ARGV[5])
local ms = math.floor(now / 1000)
local window = math.floor(ms / window_ms)
local current_key = window_of(keys_from, window)
local previous_key = window_of(keys_from, window - 1)
local current = math.max(0, tonumber(redis.call('GET', current_key) or '0'))
local previous = math.max(0, tonumber(redis.call('GET', previous_key) or '0'))
local weighted = math.floor((1 - (ms % window_ms) / window_ms) * previous)

local allowed, written = 1, nil
if cost < 0 then
  written = math.max(0, current + cost)
elseif cost > limit then
  allowed = 0
elseif cost > 0 then
  if current + weighted + cost <= limit then
    written = current + cost
  else
    allowed = 0
  end
end

store_count(current_key, current, written, window_ms * 2 + 1000)
return {allowed, now, limit, window, current, previous}
