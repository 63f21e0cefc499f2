-- One workload for wrk, described by a plan file that bench/wrk.ts writes (its path is the one
-- argument after `--`). The plan's lines:
--   get PATH                    a prebuilt GET, sent in turn (pages, queries)
--   read RECORDS PREFIX SUFFIX  instead, a GET of PREFIX, a random id in 1..RECORDS, SUFFIX (SUFFIX may be empty)
--   header NAME: VALUE          a header on every request
--   create METHOD PATH          a create template; {n} is a serial, {age} and {city} are derived from it
--   create-header NAME: VALUE   a header on creates only
--   body TEXT                   the create's body template (JSON for json-server and Directus)
--   city TEXT                   a city for creates, already encoded for where it goes
--   creates SHARE               the share of creates among requests: 1 for creates, 0.1 for the mix
--   serial N                    the first serial: each run of the bench starts past the last one's
-- done() prints one line, `wrk-result {json}`, that bench/wrk.ts reads: latency percentiles, counts,
-- answers outside 2xx, and the CPU time wrk used (from /proc, as bench/proc-stats.ts reads a server's).

local gets, cities, headers, create_headers = {}, {}, {}, {}
local create_method, create_path, create_body
local read_records, read_prefix, read_suffix
local creates, serial = 0, 0
local next_get = 0
-- Globals, not locals: done() reads them from each thread with thread:get.
non2xx, statuses = 0, {}

local function parse(path)
  for line in io.lines(path) do
    local key, value = line:match('^(%S+) (.*)$')
    if key == 'get' then gets[#gets + 1] = value
    elseif key == 'read' then
      read_records, read_prefix, read_suffix = value:match('^(%d+) (%S+) ?(.*)$')
      read_records = tonumber(read_records)
    elseif key == 'header' or key == 'create-header' then
      local name, text = value:match('^([^:]+): (.*)$')
      if key == 'header' then headers[name] = text end
      create_headers[name] = text
    elseif key == 'create' then create_method, create_path = value:match('^(%S+) (.*)$')
    elseif key == 'body' then create_body = value
    elseif key == 'city' then cities[#cities + 1] = value
    elseif key == 'creates' then creates = tonumber(value)
    elseif key == 'serial' then serial = tonumber(value)
    end
  end
end

local threads = {}

function setup(thread)
  thread:set('index', #threads)
  threads[#threads + 1] = thread
end

function init(args)
  parse(args[1])
  -- Each thread its own range of serials and its own random sequence.
  serial = serial + (index or 0) * 10000000
  math.randomseed(serial + os.time())
  for i = 1, #gets do gets[i] = wrk.format('GET', gets[i], headers) end
  next_get = math.random(#gets > 0 and #gets or 1) - 1
end

local function fill(template, n)
  local city = cities[(n % #cities) + 1]
  return (template:gsub('{n}', tostring(n)):gsub('{age}', tostring(18 + n % 73)):gsub('{city}', function() return city end))
end

function request()
  if creates >= 1 or (creates > 0 and math.random() < creates) then
    serial = serial + 1
    local body = create_body and fill(create_body, serial) or nil
    return wrk.format(create_method, fill(create_path, serial), create_headers, body)
  end
  if read_records ~= nil then
    return wrk.format('GET', read_prefix .. math.random(read_records) .. read_suffix, headers)
  end
  next_get = next_get % #gets + 1
  return gets[next_get]
end

function response(status)
  statuses[status] = (statuses[status] or 0) + 1
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
end

-- The CPU seconds (user + system, every thread) this wrk process has used, from /proc/self/stat.
local function cpu_seconds()
  local file = io.open('/proc/self/stat')
  if file == nil then return -1 end
  local stat = file:read('*a')
  file:close()
  local fields = {}
  for field in stat:match('.*%) (.*)$'):gmatch('%S+') do fields[#fields + 1] = field end
  return (tonumber(fields[12]) + tonumber(fields[13])) / 100
end

function done(summary, latency)
  local bad, counts, codes = 0, {}, {}
  for _, thread in ipairs(threads) do
    bad = bad + thread:get('non2xx')
    for status, count in pairs(thread:get('statuses')) do counts[status] = (counts[status] or 0) + count end
  end
  for status, count in pairs(counts) do codes[#codes + 1] = string.format('"%d":%d', status, count) end
  local e = summary.errors
  io.write(string.format(
    'wrk-result {"requests":%d,"durationUs":%d,"bytes":%d,"p50Us":%d,"p99Us":%d,"connectErrors":%d,' ..
      '"readErrors":%d,"writeErrors":%d,"timeouts":%d,"non2xx":%d,"statusCodes":{%s},"cpuSeconds":%.2f}\n',
    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.timeout, bad, table.concat(codes, ','), cpu_seconds()))
end
