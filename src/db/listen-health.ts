// Whether this instance hears every NOTIFY (PostgreSQL). The token cache and the tenant tree are
// kept fresh only by notifications; a NOTIFY sent while the LISTEN connection is down is lost for
// good, so while this says "deaf" those caches must not be trusted, and once it says "listening"
// again they must be dropped before use (the listener is already subscribed then, so nothing
// committed after the drop can be missed).
//
// Two ways of going deaf are detected:
// - the LISTEN connection closes (server stopped or restarted, backend terminated, socket reset):
//   postgres.js calls its `onclose`, we mark deaf at once; it re-subscribes every channel by
//   itself and calls each channel's `onlisten`, and when all are back we are listening again;
// - the connection stays open but nothing comes through (frozen server, network partition): a
//   heartbeat NOTIFY sent on the LISTEN connection itself every second must come back within the
//   deadline. A heartbeat that comes back proves that every notification committed before it was
//   delivered (one session receives notifications in commit order).

export type ListenListener = (listening: boolean) => void;

export class ListenHealth {
  private socketUp = true;
  private heartbeatUp = true;
  private readonly pending = new Set<string>();
  private readonly channels = new Set<string>();
  private readonly listeners: ListenListener[] = [];
  private closed = false;
  lastHeardAt = Date.now();

  get listening(): boolean {
    return this.socketUp && this.heartbeatUp;
  }

  onChange(fn: ListenListener): void {
    this.listeners.push(fn);
  }

  /** A channel this instance depends on (re-subscription of all of them ends a loss). */
  track(channel: string): void {
    this.channels.add(channel);
  }

  /** The LISTEN connection closed: every channel must be subscribed again. */
  connectionLost(): void {
    for (const c of this.channels) this.pending.add(c);
    this.update(() => {
      this.socketUp = false;
    });
  }

  /** postgres.js's `onlisten`: the channel is subscribed (first time or after a reconnection). */
  subscribed(channel: string): void {
    this.pending.delete(channel);
    if (this.pending.size === 0) this.update(() => (this.socketUp = true));
  }

  /** Our own heartbeat came back: everything committed before it has been delivered. */
  heard(): void {
    this.lastHeardAt = Date.now();
    this.update(() => (this.heartbeatUp = true));
  }

  /** Called every tick: silent for longer than `deadlineMs` means deaf. */
  checkSilence(deadlineMs: number): void {
    if (Date.now() - this.lastHeardAt > deadlineMs) this.update(() => (this.heartbeatUp = false));
  }

  /**
   * The database is being closed on purpose (a stop, a one-shot command's end): the LISTEN
   * connection closing then is no loss, and nobody is told of it (no error line for a normal stop).
   */
  close(): void {
    this.closed = true;
  }

  private update(change: () => void): void {
    if (this.closed) return;
    const before = this.listening;
    change();
    const after = this.listening;
    if (before !== after) for (const fn of this.listeners) fn(after);
  }
}
