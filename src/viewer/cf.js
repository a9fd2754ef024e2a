// Coordinates for people: CF time decoding (units "days since 2000-01-01", calendars), the
// grid cell under a coordinate (cell edges midway between coordinates, outer cells as wide
// as their neighbour: the rule the map tiles use, so the readout names the cell the tile
// shows there), and number formatting. No DOM here; viewer.js, views.js and series.js use
// these. The dates of a time coordinate array come from the server (its labels, the same
// as /v1/slice sel= and /v1/reduce give); the decoding here is for what the server has no
// labels for (an array attribute `time_units` over an index) and for older servers.
"use strict";

const CF_UNITS = {
  second: 1, seconds: 1, sec: 1, secs: 1, s: 1,
  minute: 60, minutes: 60, min: 60, mins: 60,
  hour: 3600, hours: 3600, hr: 3600, hrs: 3600, h: 3600,
  day: 86400, days: 86400, d: 86400,
  week: 604800, weeks: 604800,
};

// `units` as a CF time ("UNIT since Y-M-D[ H:M:S[.f]][Z|±hh[:mm]]") → {scale (seconds per
// unit), ref: {y, mo, d, h, mi, s}, offsetMin}, or null when it is not one.
function parseTimeUnits(units) {
  if (typeof units !== "string") return null;
  const m = units.trim().match(/^(\w+)\s+since\s+(-?\d{1,4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2}(?:\.\d*)?))?)?\s*(Z|UTC|[+-]\d{1,2}(?::?\d{2})?)?\s*$/i);
  if (!m) return null;
  const scale = CF_UNITS[m[1].toLowerCase()];
  if (!scale) return null;
  let offsetMin = 0;
  if (m[8] && !/^(Z|UTC)$/i.test(m[8])) {
    const z = m[8].match(/^([+-])(\d{1,2}):?(\d{2})?$/);
    offsetMin = (z[1] === "-" ? -1 : 1) * (Number(z[2]) * 60 + Number(z[3] || 0));
  }
  return {
    scale,
    ref: { y: Number(m[2]), mo: Number(m[3]), d: Number(m[4]), h: Number(m[5] || 0), mi: Number(m[6] || 0), s: Number(m[7] || 0) },
    offsetMin,
  };
}

const MONTH_365 = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const MONTH_366 = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

// Calendars with a fixed year: days per month, and days per year.
function fixedCalendar(name) {
  switch (name) {
    case "noleap": case "365_day": return MONTH_365;
    case "all_leap": case "366_day": return MONTH_366;
    case "360_day": return Array(12).fill(30);
    default: return null;
  }
}

const pad = (n, w = 2) => String(n).padStart(w, "0");

function isoDate(y, mo, d, secOfDay, withTime) {
  const year = y < 0 ? "-" + pad(-y, 4) : pad(y, 4);
  let out = `${year}-${pad(mo)}-${pad(d)}`;
  if (withTime) {
    const s = Math.round(secOfDay);
    out += ` ${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}`;
    if (s % 60) out += `:${pad(s % 60)}`;
  }
  return out;
}

// A decoder for values in `units` on `calendar`: value → ISO date text ("2025-01-04", or
// "2025-01-04 06:00" when `withTime`), or null when the units are not a CF time or the
// calendar is not one this knows (julian, the standard calendar's Julian part before
// 1582-10-15: shown as the proleptic Gregorian date).
function timeDecoder(units, calendar) {
  const t = parseTimeUnits(units);
  if (!t) return null;
  const cal = String(calendar || "standard").toLowerCase();
  const months = fixedCalendar(cal);
  if (!months && !["standard", "gregorian", "proleptic_gregorian"].includes(cal)) return null;
  const { ref } = t;
  const refSec = ((ref.h * 60 + ref.mi - t.offsetMin) * 60) + ref.s;
  if (!months) {
    const base = new Date(0);
    base.setUTCFullYear(ref.y, ref.mo - 1, ref.d);
    base.setUTCHours(0, 0, 0, 0);
    return (value, withTime) => {
      if (value === null || !Number.isFinite(value)) return null;
      const when = new Date(base.getTime() + (refSec + value * t.scale) * 1000);
      if (Number.isNaN(when.getTime())) return null;
      const sec = when.getUTCHours() * 3600 + when.getUTCMinutes() * 60 + when.getUTCSeconds() + when.getUTCMilliseconds() / 1000;
      return isoDate(when.getUTCFullYear(), when.getUTCMonth() + 1, when.getUTCDate(), sec, withTime);
    };
  }
  const yearDays = months.reduce((a, b) => a + b, 0);
  const refDay = ref.y * yearDays + months.slice(0, ref.mo - 1).reduce((a, b) => a + b, 0) + (ref.d - 1);
  return (value, withTime) => {
    if (value === null || !Number.isFinite(value)) return null;
    const total = refSec + value * t.scale;
    let day = refDay + Math.floor(total / 86400);
    const sec = total - Math.floor(total / 86400) * 86400;
    const y = Math.floor(day / yearDays);
    day -= y * yearDays;
    let mo = 0;
    while (day >= months[mo]) day -= months[mo++];
    return isoDate(y, mo + 1, day + 1, sec, withTime);
  };
}

// Labels for the values of a time coordinate: dates, with the time of day only when some
// value is not at midnight.
function timeLabels(values, units, calendar) {
  const decode = timeDecoder(units, calendar);
  if (!decode) return null;
  const t = parseTimeUnits(units);
  const withTime = values.some((v) => v !== null && Math.abs(((v * t.scale) % 86400 + 86400) % 86400) > 1e-6)
    || (t.ref.h || t.ref.mi || t.ref.s || t.offsetMin) !== 0;
  return values.map((v) => decode(v, withTime) ?? String(v));
}

// Cell edges of a monotonic 1-D coordinate: midway between neighbours, the outer edges as
// far out as the neighbouring cell is wide. n + 1 edges, in the coordinate's own order.
function cellEdges(c) {
  const n = c.length;
  const edges = new Array(n + 1);
  for (let i = 1; i < n; i++) edges[i] = (c[i - 1] + c[i]) / 2;
  edges[0] = c[0] - (c[1] - c[0]) / 2;
  edges[n] = c[n - 1] + (c[n - 1] - c[n - 2]) / 2;
  return edges;
}

// The index of the cell of `coord` (cells from `cellEdges`) that holds `v`, or -1 outside.
// `periodic` (longitudes): `v` is compared modulo 360.
function cellIndex(coord, edges, v, periodic) {
  const n = coord.length;
  if (n < 2 || !Number.isFinite(v)) return -1;
  const ascending = coord[n - 1] >= coord[0];
  const lo = ascending ? edges[0] : edges[n];
  const hi = ascending ? edges[n] : edges[0];
  if (periodic) v = lo + (((v - lo) % 360) + 360) % 360;
  if (v < lo || v > hi) return -1;
  // Binary search for the last edge at or before v (in ascending order).
  let a = 0, b = n;  // answer in [0, n)
  while (b - a > 1) {
    const mid = (a + b) >> 1;
    const e = edges[ascending ? mid : n - mid];
    if (e <= v) a = mid; else b = mid;
  }
  return ascending ? a : n - 1 - a;
}

// A number for reading: up to 6 significant digits, no exponent for everyday magnitudes.
function formatValue(v) {
  if (v === null || v === undefined) return "no value";
  if (typeof v !== "number") return String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-4 || a >= 1e7)) return v.toExponential(4);
  return String(Number(v.toPrecision(6)));
}

function formatLat(v) { return `${formatValue(Math.abs(v))}°${v < 0 ? "S" : "N"}`; }
function formatLon(v) {
  const w = ((v + 180) % 360 + 360) % 360 - 180;
  return `${formatValue(Math.abs(w))}°${w < 0 ? "W" : "E"}`;
}

if (typeof module !== "undefined") module.exports = { parseTimeUnits, timeDecoder, timeLabels, cellEdges, cellIndex, formatValue };
