
-- Fixed window, with the keys, values and TTLs of @upstash/ratelimit: one string counter per window,
-- counting denied requests too. Mirrors FixedWindow::acquire in fixed_window.rs.
-- KEYS: counters of consecutive windows, KEYS[1] being window ARGV[2].
-- ARGV: now (µs or ""), window of KEYS[1], window length (ms), limit, cost.
-- ARGV[6] = '1' when the last key is the dynamic limit (see the prelude).
-- Reply: {allowed (0/1), now (µs), limit applied, window, count stored before this request}.
local now = now_micros()
local keys_from, window_ms, limit, cost = tonumber(ARGV[2]), tonumber(ARGV[3]), capacity(tonumber(ARGV[4])), tonumber(ARGV[5])
local window = math.floor(math.floor(now / 1000) / window_ms)
local key = window_of(keys_from, window)
-- A negative count is credit the peer's refunds left: honoured, and never taken away by a refund.
local used = tonumber(redis.call('GET', key) or '0')

local allowed, written = 1, nil
if cost < 0 then
  written = math.max(math.min(0, used), used + cost)
elseif cost > limit then
  allowed = 0
elseif cost > 0 then
  written = used + cost
  if written > limit then
    allowed = 0
  end
end

store_count(key, used, written, window_ms)
return {allowed, now, limit, window, used}
