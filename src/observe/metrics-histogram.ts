// The request-duration histogram, cheap enough for the token check's hot path. prom-client's own
// Histogram validates and hashes the label values and allocates a closure on every observation
// (~20% of an in-memory token check); here each label set's cell is found once (a route binds its
// cell) and an observation is a bucket search and three additions. prom-client still renders and
// serves it: the object implements its metric interface (name, help, type, get, reset) and is
// registered like any other metric.
interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
}

export class HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(seconds: number): void {
    this.sum += seconds;
    this.count++;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (seconds <= b[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

export class HotPathHistogram<L extends string> {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly cells = new Map<string, HistogramCell>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    private readonly bounds: readonly number[],
  ) {}

  /** The cell of one label set: look it up once and keep it where the label set is fixed. */
  cell(labels: Record<L, string>): HistogramCell {
    const key = this.labelNames.map((n) => labels[n]).join("\u0000");
    let cell = this.cells.get(key);
    if (!cell) {
      const own = Object.fromEntries(this.labelNames.map((n) => [n, labels[n]]));
      this.cells.set(key, (cell = new HistogramCell(this.bounds, own)));
    }
    return cell;
  }

  /** The series in prom-client's form: cumulative `_bucket`s with `le`, then `_sum` and `_count`. */
  get(): { name: string; help: string; type: string; aggregator: string; values: MetricValue[] } {
    const values: MetricValue[] = [];
    for (const cell of this.cells.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += cell.counts[i]!;
        values.push({ labels: { ...cell.labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...cell.labels, le: "+Inf" }, value: cell.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { ...cell.labels }, value: cell.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...cell.labels }, value: cell.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Zeroes every series (cells stay bound where they were looked up). */
  reset(): void {
    for (const cell of this.cells.values()) {
      cell.counts.fill(0);
      cell.sum = 0;
      cell.count = 0;
    }
  }
}
