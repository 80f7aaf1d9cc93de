import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentationFiles, documentedShBlocks, headingAnchor, root } from '../helpers/doc-blocks.ts';

/**
 * README.md is a front door and docs/ holds the rest, by reader (issue 25). Their curls are run
 * against `npm start` by tests/e2e/readme.test.ts; this holds the map and the links together.
 */
const files = await documentationFiles();
const texts = new Map(
  await Promise.all(
    files.map(async (file) => [file, await readFile(path.join(root, file), 'utf8')] as const),
  ),
);
const readme = texts.get('README.md')!;

/** The anchors of a markdown file's headings, code blocks left out. */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    else if (!inCode && /^#{1,6} /.test(line)) found.add(headingAnchor(line.replace(/^#+ /, '').trim()));
  }
  return found;
}

/** The headings and bold leads (`**Reads that scale.**`) of a markdown file, code left out. */
function sectionNames(markdown: string): string[] {
  const names: string[] = [];
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    else if (!inCode && /^#{1,6} /.test(line)) names.push(line.replace(/^#+ /, '').trim());
    else if (!inCode) for (const bold of line.matchAll(/\*\*([^*]+)\*\*/g)) names.push(bold[1]!.trim());
  }
  return names;
}

/** Every `docs/<file>.md "<section>"` in the code, tests and configuration, even across a comment's line break. */
async function codeReferences(): Promise<Array<{ where: string; file: string; section: string }>> {
  const folders = ['lib', 'functions', 'tests', 'bench', 'scripts', 'plugins', 'sandbox', 'openapi'];
  const sources = ['serverless.yml'];
  for (const folder of folders)
    for (const entry of await readdir(path.join(root, folder), { recursive: true }))
      if (/\.(ts|cjs|mjs|js)$/.test(entry)) sources.push(path.join(folder, entry));
  const references: Array<{ where: string; file: string; section: string }> = [];
  for (const source of sources) {
    const text = await readFile(path.join(root, source), 'utf8');
    for (const match of text.matchAll(/(docs\/[\w-]+\.md)\)?[\s*#/]*"([^"\n]+)"/g))
      references.push({ where: source, file: match[1]!, section: match[2]!.replaceAll("\\'", "'") });
  }
  return references;
}

describe('the documentation', () => {
  it('has a README of at most 200 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
  });

  it("names every docs file in the README's map", () => {
    const docs = files.filter((file) => file.startsWith('docs/'));

    expect(docs.length).toBeGreaterThan(0);
    for (const doc of docs) expect(readme, `README.md does not link ${doc}`).toContain(`](${doc})`);
  });

  it.each(files)('%s links only to files and headings that exist', async (file) => {
    const text = texts.get(file)!;
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
    const local = links.filter((link) => !/^[a-z]+:/.test(link));

    for (const link of local) {
      const [target = '', anchor] = link.split('#');
      const resolved = target === '' ? path.join(root, file) : path.resolve(root, path.dirname(file), target);
      expect(existsSync(resolved), `${file} links to ${link}, which does not exist`).toBe(true);
      if (anchor !== undefined) {
        expect(resolved.endsWith('.md'), `${file}: ${link} points into a file without headings`).toBe(true);
        const headings = anchors(await readFile(resolved, 'utf8'));
        expect([...headings], `${file} links to ${link}, a heading that does not exist`).toContain(anchor);
      }
    }
  });

  it('names, wherever code or tests point at docs/<file>.md "<section>", a file and section that exist', async () => {
    const references = await codeReferences();

    expect(references.length).toBeGreaterThan(10);
    for (const { where, file, section } of references) {
      const text = texts.get(file);
      expect(text, `${where} names ${file}, which does not exist`).toBeDefined();
      const sections = sectionNames(text!);
      expect(
        sections.some((name) => name.startsWith(section)),
        `${where} names "${section}" in ${file}, which holds no such section`,
      ).toBe(true);
    }
  });

  it("deploys in the README exactly as docs/operator.md's Deploy says", async () => {
    const blocks = await documentedShBlocks();
    const deploy = (key: string) => blocks.find((block) => block.key === key)?.text;

    expect(deploy('README.md "Deploy"')).toBeDefined();
    expect(deploy('README.md "Deploy"')).toBe(deploy('docs/operator.md "Deploy"'));
  });
});
