-- Shared head of every edgelimit script. ARGV[1] is the caller's time in microseconds since the epoch,
-- or "" to read the Redis server's clock (for fleets whose clocks disagree).
local function redis_micros()
  local time = redis.call('TIME')
  return time[1] * 1000000 + time[2]
end

local function now_micros()
  return tonumber(ARGV[1]) or redis_micros()
end

-- How long every key outlives the state it holds, in milliseconds: a window's counter its window's
-- end, a bucket the moment it is full again, an arrival time itself, a ledger its last lease's end
-- plus the ttl. That is the longest a call may take (5 s, the default timeout) plus 5 s of
-- disagreement between the clocks that decide, so that a request stamped before its window ended
-- finds the window counted. Each write sets the expiry from that end as the deciding clock reads it,
-- never from a first write (the fast paths, when the key would expire a second sooner or more). The
-- fast paths (fast/*.lua) and src/redis/mod.rs (LATE_MS) say 10000 too.
local LATE = 10000

-- State the script cannot read is never decided on nor written back: the script writes nothing and
-- replies `CORRUPTSTATE <length of key> <key> <what is wrong>`, which the client reads as
-- Error::CorruptState (src/redis/corrupt.rs). Readers return the value, or nil and this reply.
local function corrupt(key, what)
  return redis.error_reply('CORRUPTSTATE ' .. #key .. ' ' .. key .. ' ' .. what)
end

-- A stored value quoted for a message: its first 40 bytes, anything unprintable as '?'.
local function shown(value)
  local text = string.gsub(string.sub(value, 1, 40), '[^%w%p ]', '?')
  if #value > 40 then
    text = text .. '...'
  end
  return '"' .. text .. '"'
end

-- The reply of `command` on `key` (with `...`), or nil and an error reply: CORRUPTSTATE when the key
-- holds another type than `expected`, Redis's own error otherwise.
local function read(key, expected, command, ...)
  local reply = redis.pcall(command, key, ...)
  if type(reply) == 'table' and reply.err then
    if string.sub(reply.err, 1, 9) == 'WRONGTYPE' then
      return nil, corrupt(key, 'holds a ' .. redis.call('TYPE', key).ok .. ', not ' .. expected)
    end
    return nil, reply
  end
  return reply
end

-- `text` as a whole number from `low` to 2^53 - 1, or nil: digits only, as the scripts write them.
local function whole(text, low)
  if type(text) ~= 'string' or not string.find(text, '^%-?%d+$') or #text > 17 then
    return nil
  end
  local number = tonumber(text)
  if number < low or number > 9007199254740991 then
    return nil
  end
  return number
end

-- `text` as a finite decimal number (`-2`, `4.5`, `1e+20`, as Lua and JavaScript write numbers), or
-- nil: no whitespace, hexadecimal, `nan` or `inf`, and nothing that overflows to infinity.
local function finite(text)
  if type(text) ~= 'string' or not string.find(text, '^%-?%d+%.?%d*[eE]?[%+%-]?%d*$') then
    return nil
  end
  local number = tonumber(text)
  if number == nil or number - number ~= 0 then
    return nil
  end
  return number
end

-- The largest counter INCRBY holds, 2^63 - 1, as text: longer digit strings compare by length.
local I64_MAX, I64_MIN = '9223372036854775807', '9223372036854775808'

-- The window counter in `key` (0 if none) and its text: an integer INCRBY can hold, else nil and a
-- CORRUPTSTATE reply. Beyond 2^53 - 1 in size the number is rounded, which changes no decision (every
-- limit is smaller), and the counter is only ever changed by INCRBY of exact amounts (`add_count`).
local function counter(key)
  local stored, failed = read(key, 'a counter', 'GET')
  if failed then
    return nil, nil, failed
  end
  if not stored then
    return 0, '0'
  end
  local sign, digits = string.match(stored, '^(%-?)([1-9]%d*)$')
  local bound = sign == '-' and I64_MIN or I64_MAX
  if stored ~= '0' and (digits == nil or #digits > 19 or (#digits == 19 and digits > bound)) then
    return nil, nil, corrupt(key, 'holds ' .. shown(stored) .. ', not an integer counter')
  end
  return tonumber(stored), stored
end

-- The writes of a limit decided in a set (set/tail.lua), queued until every limit of the set has
-- decided; nil when one limit decides, whose writes run at once.
local queued = nil

-- Runs the write command `...`, or queues it when a set decides (`queued`). The algorithms write
-- their state through it, so that a set writes nothing unless it admits.
local function write(...)
  if queued then
    queued[#queued + 1] = {...}
  else
    redis.call(...)
  end
end

-- Adds `delta` (whole, at most 2^53 - 1 in size) to the counter `key`, exactly (INCRBY), and makes it
-- expire in `ttl_ms`.
local function add_count(key, delta, ttl_ms)
  if delta ~= 0 then
    write('INCRBY', key, string.format('%d', delta))
    write('PEXPIRE', key, ttl_ms)
  end
end

-- A lease (src/ratelimit/lease/mod.rs): with a ledger, an admitted cost also takes up to ARGV[7] whole
-- units more, as many as `spare` (what the limit has left after the cost) allows; the algorithm's
-- reply then ends with how many it took and the lease's id (`lease_reply`).
local function leased(spare)
  local want = tonumber(ARGV[7])
  if want == nil or spare <= 0 then
    return 0
  end
  return math.min(want, math.floor(spare))
end

-- ARGV[6] says which keys follow the algorithm's: '1' @upstash/ratelimit's dynamic limit
-- (`<prefix>:dynamic:global`), '2' the identifier's lease ledger (src/redis/lease.rs), '3' both, the
-- dynamic limit first. `follow_keys` reads them from KEYS and ARGV: here for the script's one limit,
-- and again for each limit of a set (set/tail.lua).
local lease_key, dynamic_key, state_keys
local function follow_keys()
  lease_key, dynamic_key = nil, nil
  if ARGV[6] == '2' or ARGV[6] == '3' then
    lease_key = KEYS[#KEYS]
  end
  if ARGV[6] == '1' or ARGV[6] == '3' then
    dynamic_key = KEYS[#KEYS - (lease_key and 1 or 0)]
  end
  state_keys = #KEYS - (dynamic_key and 1 or 0) - (lease_key and 1 or 0)
end
follow_keys()

-- The ledger is a hash: per lease id (`<µs>.<n>`, n from the field `n`), "<units> <end µs> <window>":
-- the whole units reserved, when the lease ends, and the window it was taken in (window algorithms).
-- Its times are Redis's (`redis_micros`), whatever clock decides, so that every instance judges alike
-- which leases are live. ARGV[8] is the leases' ttl (µs), ARGV[9] the units given back, ARGV[10..]
-- the ids of the leases their holder closes. A lease ended for longer than the ttl is dropped with no
-- refund: its units stay used until the window ends or the bucket refills them, since only its holder
-- knew how many of them it had spent.

-- The ledger's functions are made only for a call that has a ledger: making a function costs every
-- call of the script that runs its definition.
local lease_entries, lease_close, lease_settle, lease_open
if lease_key then
  -- The live leases (a list of {units, end, window, id}), after dropping those ended for longer than
  -- the ttl; or nil and a CORRUPTSTATE reply, with nothing dropped, when an entry is no lease of
  -- whole numbers up to 2^53 - 1, or the ledger's units pass 2^53 - 1 in all.
  lease_entries = function()
    local all, failed = read(lease_key, 'a lease ledger', 'HGETALL')
    if failed then
      return nil, failed
    end
    local now, ttl, live, ended, held = redis_micros(), tonumber(ARGV[8]), {}, {}, 0
    for i = 1, #all, 2 do
      local id, value = all[i], all[i + 1]
      if id ~= 'n' then
        local units, ends, window = string.match(value, '^(%d+) (%d+) (%d+)$')
        units, ends, window = whole(units, 0), whole(ends, 0), whole(window, 0)
        held = held + (units or 0)
        if not (units and ends and window) or held > 9007199254740991 then
          return nil, corrupt(lease_key, 'holds ' .. shown(id) .. ' = ' .. shown(value) .. ', not a lease up to 2^53 - 1 units')
        end
        if ends + ttl <= now then
          ended[#ended + 1] = id
        elseif ends > now then
          live[#live + 1] = {units, ends, window, id}
        end
      end
    end
    for _, id in ipairs(ended) do
      redis.call('HDEL', lease_key, id)
    end
    return live
  end

  -- Closes the leases ARGV[10..]: each still in the ledger gives back at most its own units of the
  -- ARGV[9] returned, by `give(units, window)` if given; one not found (dropped, or voided by a
  -- reset) gives nothing back, so a return never makes units its lease did not take. Returns the
  -- units given back. The ledger was checked (`lease_entries`).
  lease_close = function(give)
    local returned = tonumber(ARGV[9]) or 0
    local left = returned
    for i = 10, #ARGV do
      local value = redis.call('HGET', lease_key, ARGV[i])
      if value then
        redis.call('HDEL', lease_key, ARGV[i])
        local units, _, window = string.match(value, '^(%d+) (%d+) (%d+)$')
        local back = math.min(left, tonumber(units))
        if back > 0 then
          if give then
            give(back, tonumber(window))
          end
          left = left - back
        end
      end
    end
    return returned - left
  end

  -- The ledger checked and cleared of long-ended leases (`lease_entries`), then the leases ARGV[10..]
  -- closed (`lease_close`, with `give`): the units given back, or nil and the CORRUPTSTATE reply of a
  -- bad ledger.
  lease_settle = function(give)
    local _, bad = lease_entries()
    if bad then
      return nil, bad
    end
    return lease_close(give)
  end

  -- Records a lease of `units` taken in `window` and lasting `lasts` µs from now (Redis's time);
  -- returns its id.
  lease_open = function(units, lasts, window)
    if units <= 0 then
      return ''
    end
    local now = redis_micros()
    local id = string.format('%d.%d', now, redis.call('HINCRBY', lease_key, 'n', 1))
    redis.call('HSET', lease_key, id, string.format('%d %d %d', units, now + lasts, window))
    local keep = math.ceil((lasts + tonumber(ARGV[8])) / 1000) + LATE
    if redis.call('PTTL', lease_key) < keep then
      redis.call('PEXPIRE', lease_key, keep)
    end
    return id
  end
end

local function lease_reply(reply, extra, id)
  if lease_key then
    reply[#reply + 1] = extra
    reply[#reply + 1] = id
  end
  return reply
end

-- The capacity to apply: the dynamic limit when one is stored, else `configured`; or nil and a
-- CORRUPTSTATE reply when the stored limit is no number. A stored limit that @upstash/ratelimit
-- accepts (any text Lua's `tonumber` reads: whitespace around, hexadecimal, exponents, `inf`) is read
-- as it compares it: none is admitted under a negative limit (0), a limit above 2^53 - 1 is 2^53 - 1
-- (more than any counter reaches), and a fraction is rounded down, or up with `round_up`: the peer's
-- sliding window admits while the count is below the limit (so 3 under 2.5), its other algorithms
-- while the count is at most the limit (2 under 2.5). src/redis/dynamic_limit.rs reads it alike.
local function capacity(configured, round_up)
  if dynamic_key == nil then
    return configured
  end
  local stored, failed = read(dynamic_key, 'a dynamic limit', 'GET')
  if failed then
    return nil, failed
  end
  if not stored then
    return configured
  end
  local limit = tonumber(stored)
  if limit == nil or limit ~= limit then
    return nil, corrupt(dynamic_key, 'holds ' .. shown(stored) .. ', not a dynamic limit')
  end
  if round_up then
    limit = math.ceil(limit)
  end
  return math.max(0, math.min(9007199254740991, math.floor(limit)))
end

-- The key of window `index`, KEYS[1] being window `keys_from`. With Redis's clock, the client sends
-- the windows around its own time: a clock more than a window off Redis's raises CLOCKSKEW, an error
-- that names Redis's time, never a decision on the wrong window.
local function window_of(keys_from, index)
  local position = index - keys_from + 1
  if position < 1 or position > state_keys then
    error({err = string.format("CLOCKSKEW Redis's time, %d µs, is more than a window from the caller's", redis_micros())})
  end
  return KEYS[position]
end

-- Writes `count` (whole, at most 2^53 - 1 in size) to the window counter `key` when it differs from
-- `stored`, to expire in `ttl_ms`.
local function store_count(key, stored, count, ttl_ms)
  if count ~= nil and count ~= stored then
    write('SET', key, string.format('%d', count), 'PX', ttl_ms)
  end
end
