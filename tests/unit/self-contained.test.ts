import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The repository carries its own contract: docs/contract.md and docs/payhere.md. Nothing in it may
 * send a reader to a file it does not hold (the team's old out-of-tree contract files) or to a path
 * on one machine, and every citation of the two docs by heading must name a heading they have.
 *
 * The names and the path pattern checked for are assembled from pieces below, never written out
 * whole, so that this file passes its own check like any other: nothing needs excluding.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');

/** Never the repository's own: dependencies, VCS data, build output, local state. */
/** What .gitignore leaves out (the walk, used where git cannot run, as in the unit tier, skips it too). */
const SKIPPED_FOLDERS = new Set([
  'node_modules',
  '.git',
  '.serverless',
  '.build',
  'coverage',
  '.local',
  'test-output',
]);
const skipped = (part: string) => SKIPPED_FOLDERS.has(part) || part.startsWith('.esbuild');

/** The old contract files' names, which no clone has. */
const OUTSIDE_FILES = ['SPEC', 'GATEWAY'].map((name) => `${name}.md`);

/** An absolute path of a machine (a work folder, a home folder, macOS's Users), not part of a URL or a name. */
const MACHINE_PATH = new RegExp(`(^|[^A-Za-z0-9_.~-])/(${['work', 'home', 'Users'].join('|')})/`);

/** The docs whose headings code and docs cite, by name. */
const CITED_DOCS = ['contract', 'payhere'] as const;

/**
 * Where a citation starts: `docs/<doc>.md` (code, tests, README) or a markdown link to it
 * (`](<doc>.md)`, `](../docs/<doc>.md)`), followed by the quoted headings.
 */
const CITATION_START = new RegExp(
  `(?:\\bdocs/|\\]\\((?:\\.\\./)?(?:docs/)?)(${CITED_DOCS.join('|')})\\.md\\)?`,
  'g',
);

/** Tracked and new files (not ignored ones), as git sees them; a walk of the folders where git is not there. */
async function repositoryFiles(): Promise<string[]> {
  try {
    const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 * 1024 * 1024,
    });
    // A file deleted in the work tree is still listed until the deletion is committed.
    return listed
      .split('\0')
      .filter((file) => file !== '' && existsSync(path.join(ROOT, file)))
      .filter((file) => !file.split('/').some(skipped));
  } catch {
    return walk('');
  }
}

async function walk(folder: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(path.join(ROOT, folder), { withFileTypes: true })) {
    const relative = folder === '' ? entry.name : `${folder}/${entry.name}`;
    // (A worktree's .git is a file naming where its repository is: skipped as the folder is.)
    if (skipped(entry.name) || relative === 'bench/out') continue;
    if (entry.isDirectory()) {
      files.push(...(await walk(relative)));
    } else if (entry.isFile() && !entry.name.endsWith('.log')) files.push(relative);
  }
  return files;
}

/** The text of every file that is text (a NUL byte in its first 8 KB says it is not). */
async function texts(): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const file of (await repositoryFiles()).sort()) {
    const bytes = await readFile(path.join(ROOT, file));
    if (!bytes.subarray(0, 8192).includes(0)) found.set(file, bytes.toString('utf8'));
  }
  return found;
}

/** The headings of a markdown text, code blocks left out, as written after their `#`s. */
function headings(markdown: string): Set<string> {
  const found = new Set<string>();
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    else if (!inCode && /^#{1,6} /.test(line)) found.add(line.replace(/^#+ /, '').trim());
  }
  return found;
}

/** One quoted heading after a citation: its text, with a comment's line break inside it read as a space. */
const QUOTED = /^[\s*/#]*"([^"]+)"/;
/** Between two headings of one citation: `, `, ` and `, `, and `. */
const SEPARATOR = /^\s*(?:,\s*(?:and\s+)?|and\s+)(?=[\s*/#]*")/;

interface Citation {
  file: string;
  line: number;
  doc: string;
  heading: string;
}

/** Every `<doc>.md "<heading>"[, "<heading>"...]` citation of the two docs in one file's text. */
function citationsIn(file: string, text: string): Citation[] {
  const citations: Citation[] = [];
  for (const start of text.matchAll(CITATION_START)) {
    const line = text.slice(0, start.index).split('\n').length;
    let rest = text.slice(start.index + start[0].length);
    for (;;) {
      const quoted = QUOTED.exec(rest);
      if (!quoted) break;
      const heading = quoted[1]!
        .replace(/\s*\n\s*(?:\*|\/\/|#)?\s*/g, ' ')
        .replaceAll("\\'", "'")
        .trim();
      citations.push({ file, line, doc: `docs/${start[1]}.md`, heading });
      rest = rest.slice(quoted[0].length);
      const separator = SEPARATOR.exec(rest);
      if (!separator) break;
      rest = rest.slice(separator[0].length);
    }
  }
  return citations;
}

const files = await texts();

describe('the repository is self-contained', () => {
  it('reads the files git tracks, this one among them', () => {
    expect(files.size).toBeGreaterThan(100);
    expect(files.has('tests/unit/self-contained.test.ts')).toBe(true);
    expect(files.has('docs/contract.md')).toBe(true);
  });

  it('names no contract file that lives outside it', () => {
    const found: string[] = [];
    for (const [file, text] of files)
      for (const name of OUTSIDE_FILES)
        if (file.includes(name) || text.includes(name)) found.push(`${file}: ${name}`);

    expect(found).toEqual([]);
  });

  it("holds no absolute path of anyone's machine", () => {
    const found: string[] = [];
    for (const [file, text] of files)
      text.split('\n').forEach((line, i) => {
        if (MACHINE_PATH.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });

    expect(found).toEqual([]);
  });

  it('cites only headings that docs/contract.md and docs/payhere.md have', () => {
    const headingsOf = new Map<string, Set<string>>(
      CITED_DOCS.map((doc) => [`docs/${doc}.md`, headings(files.get(`docs/${doc}.md`) ?? '')]),
    );
    const citations = [...files].flatMap(([file, text]) => citationsIn(file, text));
    const missing = citations
      .filter(({ doc, heading }) => !headingsOf.get(doc)?.has(heading))
      .map(({ file, line, doc, heading }) => `${file}:${line}: ${doc} has no heading "${heading}"`);

    // Most of the code's and the docs' citations are of this form: finding few means the parsing broke.
    expect(citations.length).toBeGreaterThan(80);
    expect(missing).toEqual([]);
  });
});
