
-- Multi-region token bucket and GCRA (src/multi_region/): per epoch, a hash of the admitted requests,
-- `<time µs>:<request id> -> cost`, and the state entering the epoch (`base`, plus `-tokens` for the
-- token bucket), so that regions merge by union. The state is the replay, in time order, of the
-- previous and current epochs' requests from the previous epoch's base (refunds last within a
-- microsecond), each request consumed even past empty (merged requests may together exceed the
-- limit: the debt is waited out). Mirrors Gcra::consume / TokenBucket::consume and their apply,
-- through state::derived.
-- KEYS: the current epoch's hash, the previous epoch's; the dynamic limit last when ARGV[6] = '1'.
-- ARGV: now (µs), 'gcra' or 'tb', then for gcra the emission interval (µs), the tolerance (µs) and the
-- burst, for tb the max tokens, the interval (ms) and the refill rate; the dynamic flag; the cost; this
-- request's field; the hash's TTL (ms, from now to the next epoch's end plus LATE).
-- Reply: {allowed (0/1), now (µs), capacity applied, current epoch's fields, previous epoch's fields,
-- the cost recorded}, the fields as HGETALL read them before this request. Every number read is
-- checked to be at most 2^53 - 1 in size, and so is every state of the replay: past it, CORRUPTSTATE.
local now = now_micros()
local gcra = ARGV[2] == 'gcra'
local a, b, c = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local cost = tonumber(ARGV[7])
local limit, failed = capacity(gcra and c or a)
if failed then
  return failed
end
if gcra then
  b = a * limit
else
  a = limit
end

-- `text` as a finite number at most 2^53 - 1 in size, or nil.
local function exact(text)
  local number = finite(text)
  return number and math.abs(number) <= 9007199254740991 and number
end

-- The epoch's hash `key`, checked: `base` whole, `-tokens` and every request's cost exact numbers,
-- every other field `<time µs>:<id>`; or nil and a CORRUPTSTATE reply.
local function epoch(key)
  local fields, bad = read(key, 'a hash of requests', 'HGETALL')
  if bad then
    return nil, bad
  end
  for i = 1, #fields, 2 do
    local name, value = fields[i], fields[i + 1]
    local valid
    if name == 'base' then
      valid = whole(value, 0)
    elseif name == '-tokens' then
      valid = exact(value)
    else
      valid = string.find(name, '^%d+:') and whole(string.match(name, '^(%d+):'), 0) and exact(value)
    end
    if not valid then
      return nil, corrupt(key, 'holds ' .. shown(value) .. ' in field ' .. shown(name))
    end
  end
  return fields
end

local current, bad = epoch(KEYS[1])
if bad then
  return bad
end
local previous, bad_previous = epoch(KEYS[2])
if bad_previous then
  return bad_previous
end

local function field(fields, wanted)
  for i = 1, #fields, 2 do
    if fields[i] == wanted then
      return tonumber(fields[i + 1])
    end
  end
  return nil
end

-- The state a hash's base fields describe: the TAT (gcra) or {refilled at (ms), tokens} (tb), or nil.
local function base(fields)
  local at = field(fields, 'base')
  if at == nil then
    return nil
  end
  if gcra then
    return at
  end
  local negative = field(fields, '-tokens')
  if negative == nil then
    return nil
  end
  return {at, -negative}
end

-- Appends the requests of `fields` to `list` as {time, id, cost}.
local function requests(fields, list)
  for i = 1, #fields, 2 do
    local name = fields[i]
    local colon = string.find(name, ':', 1, true)
    if colon ~= nil then
      local at, spent = tonumber(string.sub(name, 1, colon - 1)), tonumber(fields[i + 1])
      if at ~= nil and spent ~= nil then
        list[#list + 1] = {at, string.sub(name, colon + 1), spent}
      end
    end
  end
end

-- The token bucket as it is at `t` (µs): refilled by whole steps, or new if full by then.
local function load(state, t)
  local ms = math.floor(t / 1000)
  if state ~= nil then
    local missing = a - state[2]
    if missing > 0 and t < (state[1] + math.ceil(missing / c) * b) * 1000 then
      local steps = math.floor(math.max(0, ms - state[1]) / b)
      return {state[1] + steps * b, math.min(a, state[2] + steps * c)}
    end
  end
  return {ms, a}
end

-- The state after a request of `spent` admitted at `t`, past empty if need be.
local function consume(state, t, spent)
  if gcra then
    local tat = math.max(state or t, t)
    if spent < 0 then
      return math.max(tat - math.floor(-spent * a), t)
    end
    return tat + math.ceil(spent * a)
  end
  local bucket = load(state, t)
  if spent < 0 then
    return {bucket[1], math.min(a, bucket[2] - spent)}
  end
  return {bucket[1], bucket[2] - spent}
end

-- The state after the requests of `list` in time order, from `state`; or false once a state
-- passes 2^53 - 1 in size (an arrival time, or a debt of tokens).
local function replay(state, list)
  -- Refunds last among requests of one microsecond (as state::derived sorts them).
  table.sort(list, function(x, y)
    if x[1] ~= y[1] then
      return x[1] < y[1]
    end
    if (x[3] < 0) ~= (y[3] < 0) then
      return y[3] < 0
    end
    return x[2] < y[2]
  end)
  for _, request in ipairs(list) do
    state = consume(state, request[1], request[3])
    if (gcra and state or -state[2]) > 9007199254740991 then
      return false
    end
  end
  return state
end

local earlier = {}
requests(previous, earlier)
local entering = replay(base(previous), earlier)
local all = {}
requests(previous, all)
requests(current, all)
local state = replay(base(previous), all)
if entering == false or state == false then
  return corrupt(KEYS[1], 'holds requests whose replay passes 2^53 - 1')
end

local allowed = 1
if cost > limit then
  allowed = 0
elseif cost > 0 then
  if gcra then
    local tat = math.max(state or now, now)
    allowed = (tat + math.ceil(cost * a) - now <= b) and 1 or 0
  else
    allowed = (load(state, now)[2] >= cost) and 1 or 0
  end
elseif gcra then
  -- A refund is recorded as at most what the bucket lacks now, never below empty: no merge turns it
  -- into credit.
  cost = math.max(cost, -(math.max(state or now, now) - now) / a)
else
  cost = math.max(cost, math.min(0, load(state, now)[2] - a))
end

local recorded = '0'
if allowed == 1 and cost ~= 0 then
  recorded = string.format('%.17g', cost)
  if redis.call('HEXISTS', KEYS[1], 'base') == 0 and entering ~= nil then
    if gcra then
      redis.call('HSET', KEYS[1], 'base', string.format('%d', entering))
    else
      redis.call('HSET', KEYS[1], 'base', string.format('%d', entering[1]), '-tokens', string.format('%.17g', -entering[2]))
    end
  end
  redis.call('HSET', KEYS[1], ARGV[8], recorded)
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[9]))
end
return {allowed, now, limit, current, previous, recorded}
