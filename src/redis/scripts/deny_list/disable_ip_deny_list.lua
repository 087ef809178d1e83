-- Disables the IP deny list, with the keys and steps of @upstash/ratelimit's `disableIpDenyList`, in
-- one atomic script instead of its MULTI: its IPs leave the set of every deny list, and the status is
-- "disabled", without expiry.
-- KEYS: `<prefix>:denyList:all`, `<prefix>:denyList:ipDenyList`, `<prefix>:ipDenyListStatus`.
-- Reply: 'OK'.
local all, ips, status = KEYS[1], KEYS[2], KEYS[3]
redis.call('SDIFFSTORE', all, all, ips)
redis.call('DEL', ips)
return redis.call('SET', status, 'disabled')
