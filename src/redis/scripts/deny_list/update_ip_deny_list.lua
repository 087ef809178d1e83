-- Replaces the IP deny list, with the keys and steps of @upstash/ratelimit's `updateIpDenyList`, in one
-- atomic script instead of its MULTI: the old IPs leave the set of every deny list, the new ones are
-- stored (less those the console put there itself) and join it, and the status is "valid" until it
-- expires.
-- KEYS: `<prefix>:denyList:all`, `<prefix>:denyList:ipDenyList`, `<prefix>:ipDenyListStatus`.
-- ARGV: the status's lifetime (ms), then the IPs.
-- Reply: how many IPs the IP deny list holds.
local all, ips, status = KEYS[1], KEYS[2], KEYS[3]
redis.call('SDIFFSTORE', all, all, ips)
redis.call('DEL', ips)
for first = 2, #ARGV, 4096 do
  redis.call('SADD', ips, unpack(ARGV, first, math.min(first + 4095, #ARGV)))
end
redis.call('SDIFFSTORE', ips, ips, all)
redis.call('SUNIONSTORE', all, all, ips)
redis.call('SET', status, 'valid', 'PX', ARGV[1])
return redis.call('SCARD', ips)
