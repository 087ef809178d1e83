-- The common request of a fixed window, decided before the prelude (build.rs sends this first): each
-- helper the prelude defines is a closure made on every call, which this request does not need.
-- It applies to the caller's time (ARGV[1]) or Redis's (ARGV[1] empty), with neither a dynamic limit
-- nor a lease (no ARGV[6]), and a cost from 1 to the limit, counted at once (INCRBY) as the peer's
-- script counts. The reply is the count after it, alone, or with Redis's time {count, time}: the
-- client knows the rest it sent, and decides on the count found (src/redis/backend.rs). What INCRBY
-- refuses to count, and a count past 2^53 - 1 in size (taken back at once), go on to the prelude and
-- the general way.
local fast_clock = ARGV[1] == '' and redis.call('TIME')
local fast_now = fast_clock and fast_clock[1] * 1000000 + fast_clock[2] or tonumber(ARGV[1])
local fast_cost = tonumber(ARGV[5])
if fast_now and ARGV[6] == nil and fast_cost and fast_cost > 0 and fast_cost <= tonumber(ARGV[4]) then
  local fast_window_ms, fast_ms = tonumber(ARGV[3]), math.floor(fast_now / 1000)
  local fast_window = math.floor(fast_ms / fast_window_ms)
  local fast_key = KEYS[fast_window - tonumber(ARGV[2]) + 1]
  if fast_key then
    local count = redis.pcall('INCRBY', fast_key, ARGV[5])
    if type(count) == 'number' then
      if math.abs(count) <= 9007199254740991 then
        -- The counter outlives its window's end by LATE, 10000 ms (see the prelude): set when it
        -- expires a second sooner or more (a new counter, one the peer set from its first write).
        local fast_ttl = (fast_window + 1) * fast_window_ms + 10000 - fast_ms
        if redis.call('PTTL', fast_key) < fast_ttl - 1000 then
          redis.call('PEXPIRE', fast_key, fast_ttl)
        end
        if fast_clock then
          return {count, fast_now}
        end
        return count
      end
      redis.call('DECRBY', fast_key, ARGV[5])
    end
  end
end
