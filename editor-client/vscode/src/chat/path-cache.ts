// Whether a path exists, remembered: a streamed answer is re-rendered per delta and each
// `path:line` in it would otherwise cost a file-system lookup every time. What is remembered is
// forgotten whenever files may have come or gone (a file watcher event, a tool call of the
// agent, a new conversation), so a file created meanwhile still becomes a link.

export class PathExistsCache {
  private readonly known = new Map<string, boolean>();

  constructor(
    private readonly check: (path: string) => boolean,
    private readonly max = 5000,
  ) {}

  exists(path: string): boolean {
    const known = this.known.get(path);
    if (known !== undefined) return known;
    const found = this.check(path);
    if (this.known.size >= this.max) this.known.clear();
    this.known.set(path, found);
    return found;
  }

  /** Files may have been created or removed: look again next time. */
  forget(): void {
    this.known.clear();
  }
}
