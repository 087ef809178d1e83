
-- resetUsedTokens of a limit that leases (src/redis/lease.rs): forgets what an identifier used, but
-- not the units other instances hold in live leases, which they may still spend: the fresh state
-- counts them, so a reset never lets a fleet admit past the limit. Which leases are live is judged by
-- the ledger's clock, Redis's, whatever the resetting caller's says. The leases ARGV[10..] are those
-- the resetting instance voids (it drops them without spending them): they are removed and not
-- counted.
-- KEYS: the algorithm's state keys (for the window algorithms, the windows around now, KEYS[1]
-- being window ARGV[2]), the dynamic limit's key when ARGV[6] = '3', then the ledger.
-- ARGV: now (µs or ""), the algorithm's three parameters as its own script takes them, the algorithm
-- ('fixed', 'sliding', 'bucket' or 'gcra'), '3' or '2', '0', the leases' ttl (µs), '0', the ids voided.
-- Reply: the units still leased out, now counted. Nothing is written when the ledger is corrupt or
-- the state counting its units would pass 2^53 - 1.
local now = now_micros()
local kind, a, b, c = ARGV[5], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local max_tokens, failed = a, nil
if kind == 'bucket' then
  max_tokens, failed = capacity(a)
end
local live, bad = lease_entries()
if failed or bad then
  return failed or bad
end
local voided = {}
for i = 10, #ARGV do
  voided[ARGV[i]] = true
end
-- The units still leased out: in all, and per window key for the window algorithms (each lease counted
-- in the window it was taken in, when that window is among the keys sent; a window beyond them keeps
-- its counter, and so its units, untouched).
local held, counts, ms = 0, {}, math.floor(now / 1000)
for _, lease in ipairs(live) do
  if not voided[lease[4]] then
    held = held + lease[1]
    local position = lease[3] - a + 1
    if position >= 1 and position <= state_keys then
      counts[position] = (counts[position] or 0) + lease[1]
    end
  end
end
if kind == 'gcra' and now + held * a > 9007199254740991 then
  return corrupt(lease_key, string.format('holds %d units: an arrival time past 2^53 - 1 microseconds', held))
end
lease_close()
for i = 1, state_keys do
  redis.call('DEL', KEYS[i])
end
if held == 0 then
  return 0
end
if kind == 'fixed' or kind == 'sliding' then
  -- Each counter outlives its window's end (the next window's for the sliding window) by LATE.
  local span = kind == 'fixed' and 1 or 2
  for position, count in pairs(counts) do
    local ttl = (a + position - 1 + span) * b + LATE - ms
    redis.call('SET', KEYS[position], string.format('%d', count), 'PX', math.max(ttl, 1))
  end
elseif kind == 'bucket' then
  -- Below zero, a debt that refills (as the token bucket's script reads it).
  redis.call('HSET', KEYS[1], 'refilledAt', string.format('%d', ms), 'tokens', string.format('%.17g', max_tokens - held))
  redis.call('PEXPIRE', KEYS[1], string.format('%d', math.min(math.ceil(held / c) * b + LATE, 9007199254740991)))
else
  local tat = now + held * a
  redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil(held * a / 1000) + LATE)
end
return held
