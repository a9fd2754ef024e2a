// covjson-reader (npm, the CoverageJSON reader of leaflet-coverage) reading zarrd's /edr answers in
// node: a position answer (PointSeries), an area answer (Grid with cells outside the polygon
// null), a MULTIPOINT answer (CoverageCollection) and, when a collection has levels, a
// VerticalProfile. Each is fetched with the Accept header covjson-reader itself sends and
// handed to CovJSON.read as an object (read(url) needs the browser's XMLHttpRequest); then its
// domain axes and range values must be reachable through the reader's API (loadDomain,
// loadRange, range.get, subsetByIndex) and equal the JSON's own values.
//
// Usage: node read_covjson.mjs BASE_URL        (run by .ci/edr_clients.sh)
// Prints "covjson-reader: N passed, N failed" and exits 1 on any failure.

import * as CovJSON from 'covjson-reader'

const BASE = (process.argv[2] || '').replace(/\/$/, '')
if (!BASE) {
  console.error('usage: node read_covjson.mjs BASE_URL')
  process.exit(2)
}
const EDR = `${BASE}/edr`
const DAILY = 'analysis:daily'
// What covjson-reader's own load() sends (src/http-common.js getAcceptHeader).
const ACCEPT = 'application/prs.coverage+json; q=1.0, application/ld+json; q=0.1, application/json; q=0.1'

let passed = 0
const failed = []

async function check (name, fn) {
  try {
    await fn()
    passed++
    console.log(`ok   ${name}`)
  } catch (e) {
    failed.push(`${name}: ${e && e.stack ? e.stack : e}`)
    console.log(`FAIL ${name}: ${e && e.message ? e.message : e}`)
  }
}

function assert (cond, msg) {
  if (!cond) throw new Error(msg)
}

async function fetchJSON (path, params) {
  const url = `${EDR}${path}?${new URLSearchParams(params)}`
  const r = await fetch(url, { headers: { Accept: ACCEPT } })
  const text = await r.text()
  assert(r.status === 200, `GET ${url} -> ${r.status}: ${text.slice(0, 400)}`)
  const ctype = (r.headers.get('content-type') || '').split(';')[0].trim()
  assert(['application/prs.coverage+json', 'application/vnd.cov+json', 'application/json'].includes(ctype) || path === '/collections',
    `GET ${url}: Content-Type ${ctype}`)
  return JSON.parse(text)
}

const sameValue = (a, b) => (a === null || b === null) ? a === b : Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b))

function endsWithType (domainType, want) {
  return typeof domainType === 'string' && (domainType === want || domainType.endsWith('#' + want))
}

// Every value of `range` (covjson-reader's Range) against the raw NdArray, by index tuple.
function compareRange (range, raw, axisNames, shape) {
  const total = shape.reduce((a, b) => a * b, 1)
  assert(raw.values.length === total, `${raw.values.length} values for shape ${shape}`)
  for (const [k, n] of shape.entries()) {
    assert(range.shape.get(axisNames[k]) === n, `range.shape ${axisNames[k]} = ${range.shape.get(axisNames[k])}, want ${n}`)
  }
  for (let flat = 0; flat < total; flat++) {
    const idx = {}
    let rest = flat
    for (let k = shape.length - 1; k >= 0; k--) {
      idx[axisNames[k]] = rest % shape[k]
      rest = Math.floor(rest / shape[k])
    }
    const got = range.get(idx)
    assert(sameValue(got, raw.values[flat]), `range.get(${JSON.stringify(idx)}) = ${got}, JSON has ${raw.values[flat]}`)
  }
}

await check('position POINT -> PointSeries: t axis and every value through range.get', async () => {
  const json = await fetchJSON(`/collections/${DAILY}/position`,
    { coords: 'POINT(-75.2 45.3)', datetime: '2001-02-05/2001-02-15', 'parameter-name': 'tas' })
  const raw = JSON.parse(JSON.stringify(json.ranges.tas)) // read() changes the object in place
  const cov = await CovJSON.read(json)
  assert(cov.type === 'Coverage', `type ${cov.type}`)
  assert(endsWithType(cov.domainType, 'PointSeries'), `domainType ${cov.domainType}`)
  assert(cov.parameters.has('tas'), `parameters ${[...cov.parameters.keys()]}`)
  const domain = await cov.loadDomain()
  for (const axis of ['x', 'y', 't']) assert(domain.axes.has(axis), `no ${axis} axis: ${[...domain.axes.keys()]}`)
  const t = domain.axes.get('t').values
  assert(t.length === 11 && t[0] === '2001-02-05T00:00:00Z' && t[10] === '2001-02-15T00:00:00Z', `t ${t}`)
  const x = domain.axes.get('x').values[0]
  const y = domain.axes.get('y').values[0]
  assert(Math.abs(((x - 285 + 540) % 360) - 180) < 1e-9 && y === 46.25, `x ${x} y ${y}: the centre of the cell (285 E, 46.25 N)`)
  const range = await cov.loadRange('tas')
  compareRange(range, raw, ['t'], [11])
  assert(typeof range.get({ t: 0 }) === 'number' && range.get({ t: 5 }) === null, 'a value on 02-05 and none on 02-10')
  const sub = await cov.subsetByIndex({ t: { start: 0, stop: 3 } })
  const subRange = await sub.loadRange('tas')
  assert(subRange.shape.get('t') === 3 && sameValue(subRange.get({ t: 2 }), raw.values[2]), 'subsetByIndex t 0..3')
})

await check('area POLYGON -> Grid: x/y/t axes, values and nulls through range.get', async () => {
  const json = await fetchJSON(`/collections/${DAILY}/area`,
    { coords: 'POLYGON((-80.1 40.1,-69.9 40.1,-80.1 49.9,-80.1 40.1))', datetime: '2001-01-01', 'parameter-name': 'tas' })
  const raw = JSON.parse(JSON.stringify(json.ranges.tas))
  const cov = await CovJSON.read(json)
  assert(endsWithType(cov.domainType, 'Grid'), `domainType ${cov.domainType}`)
  const domain = await cov.loadDomain()
  for (const axis of ['x', 'y', 't']) assert(domain.axes.has(axis), `no ${axis} axis: ${[...domain.axes.keys()]}`)
  const nx = domain.axes.get('x').values.length
  const ny = domain.axes.get('y').values.length
  assert(nx === 4 && ny === 4, `a 4 x 4 box, got ${ny} x ${nx}`)
  const xs = Array.from(domain.axes.get('x').values)
  assert(xs.every((v, k) => k === 0 || v > xs[k - 1]), `x increasing: ${xs}`)
  const range = await cov.loadRange('tas')
  compareRange(range, raw, raw.axisNames, raw.shape)
  const values = raw.values
  assert(values.some(v => v === null) && values.some(v => typeof v === 'number'), 'cells outside the triangle are null, inside are numbers')
})

await check('MULTIPOINT -> CoverageCollection of Points', async () => {
  const json = await fetchJSON(`/collections/${DAILY}/position`,
    { coords: 'MULTIPOINT((-75.2 45.3),(10.3 -5.4))', datetime: '2001-01-01', 'parameter-name': 'tas' })
  const raws = json.coverages.map(c => JSON.parse(JSON.stringify(c.ranges.tas)))
  const coll = await CovJSON.read(json)
  assert(coll.type === 'CoverageCollection', `type ${coll.type}`)
  assert(coll.coverages.length === 2, `${coll.coverages.length} coverages`)
  for (const [k, cov] of coll.coverages.entries()) {
    assert(endsWithType(cov.domainType, 'Point'), `coverage ${k}: domainType ${cov.domainType}`)
    const domain = await cov.loadDomain()
    assert(domain.axes.has('x') && domain.axes.has('y'), `coverage ${k}: axes ${[...domain.axes.keys()]}`)
    const range = await cov.loadRange('tas')
    const got = range.get({})
    assert(typeof got === 'number' && sameValue(got, raws[k].values[0]), `coverage ${k}: ${got}, JSON has ${raws[k].values[0]}`)
  }
})

await check('a collection with levels: position at one step -> VerticalProfile with a z axis', async () => {
  const list = await fetchJSON('/collections', {})
  const withLevels = list.collections.find(c => c.extent.vertical && c.extent.vertical.values.length > 1 && c.extent.temporal)
  if (!withLevels) {
    console.log('     (no collection with levels is served: nothing to read)')
    return
  }
  const bbox = withLevels.extent.spatial.bbox[0]
  const lon = (bbox[0] + bbox[2]) / 2 + 0.3
  const lat = (bbox[1] + bbox[3]) / 2 + 0.3
  const param = Object.keys(withLevels.parameter_names)[0]
  const json = await fetchJSON(`/collections/${withLevels.id}/position`,
    { coords: `POINT(${lon} ${lat})`, datetime: withLevels.extent.temporal.interval[0][0], 'parameter-name': param })
  const raw = JSON.parse(JSON.stringify(json.ranges[param]))
  const cov = await CovJSON.read(json)
  assert(endsWithType(cov.domainType, 'VerticalProfile'), `${withLevels.id}: domainType ${cov.domainType}`)
  const domain = await cov.loadDomain()
  const nz = withLevels.extent.vertical.values.length
  assert(domain.axes.has('z') && domain.axes.get('z').values.length === nz, `z axis: ${domain.axes.has('z') && domain.axes.get('z').values}`)
  const range = await cov.loadRange(param)
  compareRange(range, raw, ['z'], [nz])
})

console.log(`covjson-reader: ${passed} passed, ${failed.length} failed`)
for (const f of failed) console.log(`  FAILED ${f.split('\n')[0]}`)
process.exit(failed.length ? 1 : 0)
