
-- Sliding window, with the keys, values and TTLs of @upstash/ratelimit: the current window's counter
-- plus the previous one weighted by how much of it the sliding window still covers. Unlike the peer,
-- the cost is checked against what is left and a denied request writes nothing.
-- Mirrors SlidingWindow::acquire in sliding_window.rs.
-- KEYS: counters of consecutive windows, KEYS[1] being window ARGV[2].
-- ARGV: now (µs or ""), window of KEYS[1], window length (ms), limit, cost.
-- ARGV[6], the keys after the algorithm's (see the prelude); with a ledger, ARGV[7..], a lease's.
-- Reply: {allowed (0/1), now (µs), limit applied, window, current count before this request, previous
-- count}, the counts as text; then, with a lease, the units leased and the lease's id; or the two
-- counts alone, {current, previous}, when fast/sliding_window.lua decided it before the prelude.
local now = now_micros()
local limit, failed = capacity(tonumber(ARGV[4]), true)
if failed then
  return failed
end
local keys_from, window_ms, cost = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
local ms = math.floor(now / 1000)
local window = math.floor(ms / window_ms)
local current_key = window_of(keys_from, window)
local previous_key = window_of(keys_from, window - 1)
-- A counter outlives the end of the window after its own, when it stops weighing, by LATE.
local ttl = (window + 2) * window_ms + LATE - ms
if lease_key then
  -- A lease's units go back to the window that counted them: the current one, or the previous one,
  -- whose weight then counts only what was admitted in it.
  local _, bad_ledger = lease_settle(function(units, at)
    local target = (at == window and current_key) or (at == window - 1 and previous_key) or nil
    local held = target and counter(target)
    if held and held > 0 then
      add_count(target, -math.min(held, units), ttl - (window - at) * window_ms)
    end
  end)
  if bad_ledger then
    return bad_ledger
  end
end
local current, current_text, bad = counter(current_key)
if bad then
  return bad
end
local previous, previous_text, bad_previous = counter(previous_key)
if bad_previous then
  return bad_previous
end
current, previous = math.max(0, current), math.max(0, previous)
local weighted = math.floor((1 - (ms % window_ms) / window_ms) * previous)

local allowed, extra = 1, 0
if cost < 0 then
  -- Exact whatever the count: by INCRBY of at most the refund.
  if current > 0 then
    add_count(current_key, math.max(-current, cost), ttl)
  end
elseif cost > limit then
  allowed = 0
elseif cost > 0 then
  if current + weighted + cost <= limit then
    extra = leased(limit - current - weighted - cost)
    store_count(current_key, current, current + cost + extra, ttl)
  else
    allowed = 0
  end
end

local id = lease_key and lease_open(extra, math.min(tonumber(ARGV[8]), (window + 1) * window_ms * 1000 - now), window)
return lease_reply({allowed, now, limit, window, current_text, previous_text}, extra, id)
