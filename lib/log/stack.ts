import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LruMap } from '../memory/lru-map.ts';

/**
 * Stack traces that point at the TypeScript sources, mapped when a stack is first read, not at
 * every cold start. Node's `--enable-source-maps` reads and parses a bundle's map as the bundle
 * loads, a share of every function's import (docs/performance.md), to serve the rare stack
 * that is printed. Here a stack is formatted with the map beside the bundle that holds its frames
 * (`sourcemap: linked`, serverless.yml), read once per container, the first time a stack is.
 *
 * Only in a bundle with its map beside it, and only when Node maps nothing itself: from the
 * TypeScript sources (tests, scripts) or under `--enable-source-maps`, stacks are left to Node.
 */
export function mapStackTraces(bundle: string): boolean {
  if (process.sourceMapsEnabled || !existsSync(`${bundle}.map`)) return false;
  Error.prepareStackTrace = formatStack;
  return true;
}

/** V8's own format (`Name: message` and one `at` line per frame), each frame in a mapped bundle mapped. */
function formatStack(error: Error, frames: NodeJS.CallSite[]): string {
  let head: string;
  try {
    head = Error.prototype.toString.call(error);
  } catch {
    head = '<error>';
  }
  return [head, ...frames.map((frame, index) => `    at ${safelyMapped(frame, frames[index + 1])}`)].join(
    '\n',
  );
}

/** A stack is read where an error is being reported: mapping it must never throw in its place. */
function safelyMapped(frame: NodeJS.CallSite, caller: NodeJS.CallSite | undefined): string {
  try {
    return mappedFrame(frame, caller);
  } catch {
    return String(frame);
  }
}

/** The maps of the bundles frames were in, or null for a file without one. */
const maps = new LruMap<SourceMap | null>(8);

function mapOf(file: string): SourceMap | null {
  let map = maps.get(file);
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
    } catch {
      map = null;
    }
    maps.set(file, map);
  }
  return map;
}

/** A frame at its place in the sources, where the map beside its file says, or as V8 writes it. */
function mappedFrame(frame: NodeJS.CallSite, caller: NodeJS.CallSite | undefined): string {
  const position = positionOf(frame);
  const map = position && mapOf(position.file);
  const origin = map?.findOrigin(position!.line, position!.column);
  if (!origin || !('fileName' in origin)) return String(frame);
  // The map names sources relative to itself (../../lib/http/route.ts).
  const source = fileURLToPath(new URL(origin.fileName, pathToFileURL(position!.file)));
  const at = `${source}:${origin.lineNumber}:${origin.columnNumber}`;
  const name = sourceName(map!, frame, caller) ?? frame.getFunctionName();
  const prefix = `${frame.isAsync() ? 'async ' : ''}${frame.isConstructor() ? 'new ' : ''}`;
  return name ? `${prefix}${name} (${at})` : `${prefix}${at}`;
}

/** Where a frame is, if in a file Node loaded from disk (not node:internal, not eval), 1-based. */
function positionOf(frame: NodeJS.CallSite): { file: string; line: number; column: number } | undefined {
  const fileName = frame.getFileName();
  const line = frame.getLineNumber();
  const column = frame.getColumnNumber();
  if (!fileName || line === null || column === null) return undefined;
  const file = fileName.startsWith('file:') ? fileURLToPath(fileName) : fileName;
  return file.startsWith('/') ? { file, line, column } : undefined;
}

/**
 * The name the sources gave the function a frame is in (the bundle's is minified): the map's name
 * at the function's start, else at the caller's call, which names what it called (as Node does).
 */
function sourceName(
  map: SourceMap,
  frame: NodeJS.CallSite,
  caller: NodeJS.CallSite | undefined,
): string | undefined {
  const line = frame.getEnclosingLineNumber();
  const column = frame.getEnclosingColumnNumber();
  const enclosing = line === null || column === null ? undefined : nameAt(map, line, column);
  if (enclosing) return enclosing;
  const call = caller && positionOf(caller);
  const callerMap = call && mapOf(call.file);
  return callerMap ? nameAt(callerMap, call!.line, call!.column) : undefined;
}

function nameAt(map: SourceMap, line: number, column: number): string | undefined {
  const origin = map.findOrigin(line, column);
  return 'name' in origin && origin.name ? origin.name : undefined;
}
