import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The documentation a newcomer reads, README.md and every docs/*.md, and its `sh` blocks: what
 * tests/e2e/readme.test.ts runs against `npm start`, and tests/unit/docs.test.ts holds together.
 */
export const root = path.resolve(import.meta.dirname, '../..');

/** README.md and docs/*.md, relative to the repository's root. */
export async function documentationFiles(): Promise<string[]> {
  const docs = (await readdir(path.join(root, 'docs'))).filter((name) => name.endsWith('.md')).sort();
  return ['README.md', ...docs.map((name) => `docs/${name}`)];
}

export interface ShBlock {
  /** `<file> "<section>"`, with ` #<n>` for a section's second block and after. */
  key: string;
  file: string;
  /** The heading the block stands under, without its `#`s. */
  section: string;
  text: string;
}

/** Every fenced `sh` block of one markdown text, under the heading it stands in. */
export function shBlocks(file: string, markdown: string): ShBlock[] {
  const blocks: ShBlock[] = [];
  const perSection = new Map<string, number>();
  let section = '';
  let fence: { lang: string; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    if (fence) {
      if (line.startsWith('```')) {
        if (fence.lang === 'sh') {
          const n = (perSection.get(section) ?? 0) + 1;
          perSection.set(section, n);
          const key = `${file} "${section}"${n > 1 ? ` #${n}` : ''}`;
          blocks.push({ key, file, section, text: `${fence.lines.join('\n')}\n` });
        }
        fence = undefined;
      } else fence.lines.push(line);
    } else if (line.startsWith('```')) fence = { lang: line.slice(3).trim(), lines: [] };
    else if (/^#{1,6} /.test(line)) section = line.replace(/^#+ /, '').trim();
  }
  if (fence) throw new Error(`${file}: a code block under "${section}" is never closed`);
  return blocks;
}

/** The `sh` blocks of README.md and of every docs/*.md, in reading order. */
export async function documentedShBlocks(): Promise<ShBlock[]> {
  const files = await documentationFiles();
  const texts = await Promise.all(files.map((file) => readFile(path.join(root, file), 'utf8')));
  return files.flatMap((file, i) => shBlocks(file, texts[i]!));
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}
