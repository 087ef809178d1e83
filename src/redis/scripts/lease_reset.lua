
-- resetUsedTokens of a limit that leases (src/redis/lease.rs): forgets what an identifier used, but
-- not the units other instances hold in live leases, which they may still spend: the fresh state
-- counts them, so a reset never lets a fleet admit past the limit. The leases ARGV[10..] are those the
-- resetting instance voids (it drops them without spending them): they are removed and not counted.
-- KEYS: the algorithm's state keys (for the window algorithms, the windows around now, KEYS[1]
-- being window ARGV[2]), the dynamic limit's key when ARGV[6] = '3', then the ledger.
-- ARGV: now (µs or ""), the algorithm's three parameters as its own script takes them, the algorithm
-- ('fixed', 'sliding', 'bucket' or 'gcra'), '3' or '2', '0', the leases' ttl (µs), '0', the ids voided.
-- Reply: the units still leased out, now counted.
local now = now_micros()
local kind, a, b, c = ARGV[5], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local max_tokens, failed = a, nil
if kind == 'bucket' then
  max_tokens, failed = capacity(a)
end
local live, bad = lease_entries(now)
if failed or bad then
  return failed or bad
end
lease_close()
for i = 1, state_keys do
  redis.call('DEL', KEYS[i])
end
local voided = {}
for i = 10, #ARGV do
  voided[ARGV[i]] = true
end
local window = 0
if kind == 'fixed' or kind == 'sliding' then
  window = math.floor(math.floor(now / 1000) / b)
end
-- A window algorithm's live leases are all of the current window (a lease ends with its window).
local held = 0
for _, lease in ipairs(live) do
  if not voided[lease[4]] and lease[3] == window then
    held = held + lease[1]
  end
end
if held == 0 then
  return 0
end
if kind == 'fixed' then
  redis.call('SET', window_of(a, window), string.format('%d', held), 'PX', b)
elseif kind == 'sliding' then
  redis.call('SET', window_of(a, window), string.format('%d', held), 'PX', b * 2 + 1000)
elseif kind == 'bucket' then
  -- Below zero, a debt that refills (as the token bucket's script reads it).
  local ms = math.floor(now / 1000)
  redis.call('HSET', KEYS[1], 'refilledAt', string.format('%d', ms), 'tokens', string.format('%.17g', max_tokens - held))
  redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil(held / c) * b + 1000))
else
  local tat = now + held * a
  redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil(held * a / 1000) + 1000)
end
return held
