// Time as the wazo-auth API writes it (ISO 8601, local or UTC, with or without a fraction).

/** Python `datetime.isoformat()` of a local (naive) or UTC time; fraction only when non-zero. */
export function isoTime(epochSeconds: number, utc: boolean, alwaysFraction: boolean): string {
  const ms = Math.floor(epochSeconds * 1000);
  const d = new Date(ms);
  const [y, mo, da, h, mi, s] = utc
    ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()]
    : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
  const micros = Math.round((epochSeconds - Math.floor(epochSeconds)) * 1e6) % 1e6;
  const base = `${pad(y, 4)}-${pad(mo)}-${pad(da)}T${pad(h)}:${pad(mi)}:${pad(s)}`;
  return micros !== 0 || alwaysFraction ? `${base}.${pad(micros, 6)}` : base;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}
