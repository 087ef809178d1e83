
-- GCRA: one key holding the theoretical arrival time (TAT) in microseconds. Mirrors Gcra::acquire in
-- gcra.rs.
-- KEYS[1]: the TAT, a string of whole microseconds since the epoch, at most 2^53 - 1.
-- ARGV: now (µs or ""), emission interval (µs), tolerance (µs), burst, cost.
-- ARGV[6], the keys after the algorithm's (see the prelude; a dynamic limit replaces the burst);
-- with a ledger, ARGV[7..], a lease's.
-- Reply: {allowed (0/1), now (µs), burst applied, stored TAT or -1 if none}, then, with a lease, the
-- units leased and the lease's id. Units a closed lease gave back are stored before the request is
-- decided, and the reply reports the TAT with them.
local now = now_micros()
local interval, tolerance, burst, cost = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if dynamic_key ~= nil then
  local failed
  burst, failed = capacity(burst)
  if failed then
    return failed
  end
  tolerance = interval * burst
  if tolerance > 9007199254740991 then
    return corrupt(dynamic_key, 'holds a limit whose tolerance is above 2^53 - 1 microseconds')
  end
end
local text, bad = read(KEYS[1], 'a GCRA arrival time', 'GET')
if bad then
  return bad
end
local stored = whole(text, 0)
if text and stored == nil then
  return corrupt(KEYS[1], 'holds ' .. shown(text) .. ', not whole microseconds up to 2^53 - 1')
end
local tat = math.max(stored or now, now)

-- Stores `written` as the TAT, which outlives it by LATE: none once it is not ahead of now.
local function store(written)
  if written > now then
    write('SET', KEYS[1], string.format('%d', written), 'PX', math.ceil((written - now) / 1000) + LATE)
  else
    write('DEL', KEYS[1])
  end
end

if lease_key then
  -- What a closed lease gives back moves the TAT back, never before now.
  local back, bad_ledger = lease_settle()
  if bad_ledger then
    return bad_ledger
  end
  if back > 0 and tat > now then
    tat = math.max(tat - math.floor(back * interval), now)
    store(tat)
    stored = tat > now and tat or nil
  end
end

local allowed, written, extra = 1, nil, 0
if cost < 0 then
  written = math.max(tat - math.floor(-cost * interval), now)
elseif cost > burst then
  allowed = 0
elseif cost > 0 then
  local new_tat = tat + math.ceil(cost * interval)
  if new_tat - now <= tolerance then
    extra = leased((tolerance - (new_tat - now)) / interval)
    written = new_tat + extra * interval
  else
    allowed = 0
  end
end

if written ~= nil then
  store(written)
end
local id = lease_key and lease_open(extra, tonumber(ARGV[8]), 0)
return lease_reply({allowed, now, burst, stored or -1}, extra, id)
