-- wrk script for benches/run.sh.
--   wrk ... -s benches/wrk.lua URL [-- PATH...]
-- With paths after `--`, each thread cycles through them (a multi-URL scenario);
-- without, every request is the URL's own path. The same script is used for zarrd and
-- nginx so both pay the same client-side cost.
-- done() prints one machine-readable line:
--   WRK requests=N duration_us=N bytes=N non2xx=N errors=N p50_us=N p99_us=N mean_us=N

local paths = {}
local n = 0

function init(args)
  for _, a in ipairs(args) do
    paths[#paths + 1] = a
  end
  -- Threads start at different places in the list.
  n = math.random(#paths > 0 and #paths or 1) - 1
end

function request()
  if #paths == 0 then
    return wrk.format(nil, nil)
  end
  n = n % #paths + 1
  return wrk.format("GET", paths[n])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK requests=%d duration_us=%d bytes=%d non2xx=%d errors=%d p50_us=%d p99_us=%d mean_us=%d\n",
    summary.requests, summary.duration, summary.bytes, e.status,
    e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), math.floor(latency.mean)))
end
