import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * lib/ is what the functions are built from: it never reaches back up into functions/, and its rooms
 * (its folders) import one way, down the layers docs/maintainer.md "Which room imports which" lists,
 * or as its table of upward imports allows (`npm run lint` refuses import cycles between files).
 * Read from the sources, so a type-only import counts too: tsc and esbuild erase it, but it still
 * ties one part to another.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const LIB = path.join(ROOT, 'lib');
const FUNCTIONS = path.join(ROOT, 'functions');
const MAINTAINER = path.join(ROOT, 'docs/maintainer.md');

/** What a source imports from: `from '…'` (imports, type imports, re-exports), `import '…'`, `import('…')`. */
const SPECIFIER = /\b(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g;

/** The file a specifier names in this repository (relative, or through package.json's `imports`), or none (a package). */
function resolve(specifier: string, importer: string, imports: Record<string, string>): string | undefined {
  if (specifier.startsWith('.')) return path.resolve(path.dirname(importer), specifier);
  for (const [pattern, target] of Object.entries(imports)) {
    const [prefix = '', suffix = ''] = pattern.split('*');
    if (pattern === specifier) return path.resolve(ROOT, target);
    if (pattern.includes('*') && specifier.startsWith(prefix) && specifier.endsWith(suffix)) {
      const middle = specifier.slice(prefix.length, specifier.length - suffix.length);
      return path.resolve(ROOT, target.replace('*', middle));
    }
  }
  return undefined;
}

interface Import {
  /** The importing file, from the repository's root. */
  source: string;
  specifier: string;
  /** The file imported, absolute. */
  target: string;
}

/** Every import of lib/'s sources that names a file of this repository. */
async function libImports(): Promise<{ sources: string[]; imports: Import[] }> {
  const { imports: aliases } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as {
    imports: Record<string, string>;
  };
  const sources = (await readdir(LIB, { recursive: true }))
    .filter((file) => /\.[cm]?[jt]s$/.test(file))
    .map((file) => path.join(LIB, file));
  const imports: Import[] = [];
  for (const source of sources) {
    const text = await readFile(source, 'utf8');
    for (const [, specifier] of text.matchAll(SPECIFIER)) {
      const target = resolve(specifier!, source, aliases);
      if (target !== undefined)
        imports.push({ source: path.relative(ROOT, source), specifier: specifier!, target });
    }
  }
  return { sources, imports };
}

/** The room of a file under lib/: its first folder there (a loose file at lib/'s top is a room of its own name). */
const roomOf = (file: string) => path.relative(LIB, file).split(path.sep)[0]!;
const withinLib = (file: string) => file.startsWith(`${LIB}${path.sep}`);

/** The rows of the markdown table in `section` whose header row starts with `header`, cells trimmed. */
function tableRows(section: string, header: string): string[][] {
  const lines = section.split('\n');
  const start = lines.findIndex((line) => line.startsWith(header));
  if (start === -1) throw new Error(`docs/maintainer.md has no table headed "${header}"`);
  const rows: string[][] = [];
  // After the header and its |---| line, until the table ends.
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
        .split('|')
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

/** The rooms a cell names, each in backticks. */
const roomsIn = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map(([, room]) => room!);

/**
 * docs/maintainer.md "Which room imports which": each room's layer (1 on top), and the upward imports
 * allowed, each with its reason.
 */
async function roomMap(): Promise<{
  layers: Map<string, number>;
  duplicates: string[];
  upward: { from: string; to: string; why: string }[];
}> {
  const text = await readFile(MAINTAINER, 'utf8');
  const heading = text.indexOf('\n## Which room imports which\n');
  if (heading === -1) throw new Error('docs/maintainer.md has no section "Which room imports which"');
  const next = text.indexOf('\n## ', heading + 1);
  const section = text.slice(heading, next === -1 ? undefined : next);
  const layers = new Map<string, number>();
  const duplicates: string[] = [];
  for (const [layer = '', rooms = ''] of tableRows(section, '| layer |')) {
    for (const room of roomsIn(rooms)) {
      if (layers.has(room)) duplicates.push(room);
      layers.set(room, Number(layer));
    }
  }
  const upward = tableRows(section, '| from |').map(([from = '', to = '', why = '']) => ({
    from: roomsIn(from)[0] ?? from,
    to: roomsIn(to)[0] ?? to,
    why,
  }));
  return { layers, duplicates, upward };
}

/** The cycles among rooms, each as the rooms it passes through (strongly connected components of two or more). */
function cycles(edges: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (room: string) => {
    index.set(room, index.size);
    low.set(room, index.get(room)!);
    stack.push(room);
    onStack.add(room);
    for (const next of edges.get(room) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(room, Math.min(low.get(room)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(room, Math.min(low.get(room)!, index.get(next)!));
      }
    }
    if (low.get(room) === index.get(room)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== room);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const room of [...edges.keys()].sort()) if (!index.has(room)) visit(room);
  return found;
}

const scanned = await libImports();

describe('lib/', () => {
  it('never imports from functions/', () => {
    // Act
    const intoFunctions = scanned.imports
      .filter(({ target }) => !path.relative(FUNCTIONS, target).startsWith('..'))
      .map(({ source, specifier }) => `${source} imports ${specifier}`);

    // Assess: the scan read lib/'s own imports (else it could pass by seeing nothing), none upward.
    expect(scanned.imports.filter(({ target }) => withinLib(target)).length).toBeGreaterThan(
      scanned.sources.length,
    );
    expect(intoFunctions).toEqual([]);
  });
});

describe("lib/'s rooms", () => {
  it('are each in one layer of docs/maintainer.md "Which room imports which", and only rooms that exist are', async () => {
    // Prepare
    const { layers, duplicates } = await roomMap();

    // Act
    const rooms = new Set(scanned.sources.map(roomOf));

    // Assess
    expect(duplicates).toEqual([]);
    expect([...layers.values()].every((layer) => Number.isInteger(layer) && layer > 0)).toBe(true);
    expect([...layers.keys()].sort()).toEqual([...rooms].sort());
  });

  it('import only rooms in lower layers, or upward as the table of upward imports allows', async () => {
    // Prepare
    const { layers, upward } = await roomMap();
    const allowed = new Set(upward.map(({ from, to }) => `${from} → ${to}`));

    // Act: every import from one room into another, its layer not below the importer's.
    const notDown = scanned.imports
      .filter(({ target }) => withinLib(target))
      .map((each) => ({ ...each, from: roomOf(path.join(ROOT, each.source)), to: roomOf(each.target) }))
      .filter(({ from, to }) => from !== to && !((layers.get(to) ?? 0) > (layers.get(from) ?? 0)))
      .filter(({ from, to }) => !allowed.has(`${from} → ${to}`))
      .map(({ source, specifier, from, to }) => `${source} imports ${specifier} (${from} → ${to})`);

    // Assess
    expect(notDown).toEqual([]);
  });

  it('form no cycle but through an upward import the table allows', async () => {
    // Prepare
    const { upward } = await roomMap();
    const allowed = new Set(upward.map(({ from, to }) => `${from} → ${to}`));

    // Act
    const edges = new Map<string, Set<string>>();
    let between = 0;
    for (const { source, target } of scanned.imports) {
      if (!withinLib(target)) continue;
      const from = roomOf(path.join(ROOT, source));
      const to = roomOf(target);
      if (from === to) continue;
      between++;
      if (allowed.has(`${from} → ${to}`)) continue;
      edges.set(from, (edges.get(from) ?? new Set()).add(to));
    }

    // Assess: rooms do import each other (else the check could pass by seeing nothing), in no cycle.
    expect(between).toBeGreaterThan(50);
    expect(cycles(edges)).toEqual([]);
  });

  it('have no upward import listed that the sources no longer make, nor one without its reason', async () => {
    // Prepare
    const { layers, upward } = await roomMap();

    // Act
    const made = new Set(
      scanned.imports
        .filter(({ target }) => withinLib(target))
        .map(({ source, target }) => `${roomOf(path.join(ROOT, source))} → ${roomOf(target)}`),
    );
    const stale = upward
      .filter(({ from, to, why }) => !made.has(`${from} → ${to}`) || !layers.has(from) || why === '')
      .map(({ from, to }) => `${from} → ${to}`);

    // Assess
    expect(stale).toEqual([]);
  });
});
