
-- Fixed window, with the keys, values and TTLs of @upstash/ratelimit: one string counter per window,
-- counting denied requests too. Mirrors FixedWindow::acquire in fixed_window.rs.
-- KEYS: counters of consecutive windows, KEYS[1] being window ARGV[2].
-- ARGV: now (µs or ""), window of KEYS[1], window length (ms), limit, cost.
-- ARGV[6], the keys after the algorithm's (see the prelude); with a ledger, ARGV[7..], a lease's.
-- Reply: {allowed (0/1), now (µs), limit applied, window, count stored before this request (as text)},
-- then, with a lease, the units leased and the lease's id; or the count after this request alone, when
-- fast/fixed_window.lua decided it before the prelude.
local now = now_micros()
local limit, failed = capacity(tonumber(ARGV[4]))
if failed then
  return failed
end
local keys_from, window_ms, cost = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
local ms = math.floor(now / 1000)
local window = math.floor(ms / window_ms)
local key = window_of(keys_from, window)
-- The counter outlives its window's end by LATE.
local ttl = (window + 1) * window_ms + LATE - ms
-- With Redis's clock or a dynamic limit, the common request, a cost from 1 to the limit with no lease,
-- is counted at once (INCRBY) as in fast/fixed_window.lua, rather than read and then counted. What
-- INCRBY refuses to count, and a count past 2^53 - 1 in size (taken back at once), go the general
-- way below, which reads the value first; so does a limit of a set, which writes only once every
-- limit has decided (`queued`).
if cost > 0 and cost <= limit and not lease_key and not queued then
  local count = redis.pcall('INCRBY', key, ARGV[5])
  if type(count) == 'number' then
    if math.abs(count) <= 9007199254740991 then
      redis.call('PEXPIRE', key, ttl)
      local allowed = count <= limit and 1 or 0
      return {allowed, now, limit, window, string.format('%d', count - cost)}
    end
    redis.call('DECRBY', key, ARGV[5])
  end
end
if lease_key then
  -- A lease's units go back to its own window only: a later window never counted them.
  local _, bad_ledger = lease_settle(function(units, at)
    local held = counter(key)
    if at == window and held and held > 0 then
      add_count(key, -math.min(held, units), ttl)
    end
  end)
  if bad_ledger then
    return bad_ledger
  end
end
-- A negative count is credit the peer's refunds left: honoured, and never taken away by a refund.
local used, text, bad = counter(key)
if bad then
  return bad
end

local allowed, delta, extra = 1, 0, 0
if cost < 0 then
  if used > 0 then
    delta = math.max(-used, cost)
  end
elseif cost > limit then
  allowed = 0
elseif cost > 0 then
  if used + cost > limit then
    allowed = 0
  else
    -- Credit left by refunds is not leased: a lease is at most what a window admits.
    extra = leased(math.min(limit, limit - used) - cost)
  end
  -- Past 2^53 - 1 the count is saturated: a denied request is no longer added to it.
  if used <= 9007199254740991 then
    delta = cost + extra
  end
end

add_count(key, delta, ttl)
local id = lease_key and lease_open(extra, math.min(tonumber(ARGV[8]), (window + 1) * window_ms * 1000 - now), window)
return lease_reply({allowed, now, limit, window, text}, extra, id)
