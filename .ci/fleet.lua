-- wrk script for .ci/fleet.sh: cycles through the request mix of .ci/fleet_mix.py and
-- compares every response that has a known-correct body byte for byte. Each request
-- carries X-Request-Id "<id>-<n>", which zarrd (through nginx) returns, so a response is
-- matched to its request whatever the connection.
local dir = os.getenv("FLEET_MIX")
local paths, ranges, bodies, schedule = {}, {}, {}, {}
local pos, counter = 0, 0
-- Globals, so that done() can read each thread's counts with thread:get().
checked, mismatched, carried, bad_status, first_bad, thread_no = 0, 0, 0, 0, "", 0

local threads = {}
function setup(thread)
    thread:set("thread_no", #threads)
    threads[#threads + 1] = thread
end

function init(args)
    for line in io.lines(dir .. "/mix.tsv") do
        local id, path, range, file = line:match("^(%d+)\t([^\t]+)\t([^\t]+)\t([^\t]+)$")
        id = tonumber(id)
        paths[id] = path
        if range ~= "-" then ranges[id] = range end
        if file ~= "-" then
            local f = assert(io.open(file, "rb"))
            bodies[id] = f:read("*a")
            f:close()
        end
    end
    for n in io.lines(dir .. "/schedule.txt")() :gmatch("%d+") do
        schedule[#schedule + 1] = tonumber(n)
    end
    -- Threads start at different points of the schedule.
    pos = thread_no * 9973
end

function request()
    pos = pos % #schedule + 1
    local id = schedule[pos]
    counter = counter + 1
    local headers = { ["X-Request-Id"] = id .. "-" .. counter }
    if ranges[id] then headers["Range"] = ranges[id] end
    return wrk.format("GET", paths[id], headers)
end

function response(status, headers, body)
    local rid = headers["x-request-id"] or headers["X-Request-Id"] or ""
    local id = tonumber(rid:match("^(%d+)-"))
    if status ~= 200 and status ~= 206 then
        bad_status = bad_status + 1
        if first_bad == "" then first_bad = "status " .. status .. " for " .. tostring(id and paths[id]) end
        return
    end
    if id == nil then
        mismatched = mismatched + 1
        if first_bad == "" then first_bad = "response without our request id" end
        return
    end
    local expected = bodies[id]
    if expected ~= nil then
        checked = checked + 1
        if #body > #expected and body:sub(-#expected) == expected then
            -- wrk keeps the partial body of a response cut off by a read error (already
            -- counted in errors.read) in front of the next one on that connection: the
            -- response itself is right, and the cut-off one is counted once.
            carried = carried + 1
        elseif body ~= expected then
            mismatched = mismatched + 1
            if first_bad == "" then
                first_bad = "wrong body for " .. paths[id] .. " (" .. #body .. " bytes, expected " .. #expected .. ")"
            end
        end
    end
end

function done(summary, latency, requests)
    local c, m, k, b, first = 0, 0, 0, 0, ""
    for _, t in ipairs(threads) do
        c = c + t:get("checked")
        m = m + t:get("mismatched")
        k = k + t:get("carried")
        b = b + t:get("bad_status")
        if first == "" then first = t:get("first_bad") end
    end
    local e = summary.errors
    local f = assert(io.open(os.getenv("FLEET_RESULT"), "w"))
    f:write(string.format(
        "requests=%d\nchecked=%d\nmismatched=%d\ncarried=%d\nbad_status=%d\nconnect_errors=%d\nread_errors=%d\n" ..
        "write_errors=%d\ntimeouts=%d\nstatus_errors=%d\np50_ms=%.2f\np99_ms=%.2f\nfirst_bad=%s\n",
        summary.requests, c, m, k, b, e.connect, e.read, e.write, e.timeout, e.status,
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, first))
    f:close()
end
