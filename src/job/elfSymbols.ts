// The dynamic linking facts of an ELF shared library, read from the file (no binutils): its soname,
// the libraries it needs, the symbols it imports (with the version each asks for) and the ones it
// defines. Little-endian ELF64 only: the x86-64 and AArch64 Linux libraries PyTorch ships.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { VramfitError } from "../errors.js";

export interface ElfSymbol {
  name: string;
  /** The symbol version (`libcublas.so.13`); null when unversioned. */
  version: string | null;
  /** For an import: the library the version belongs to (the verneed entry's file); null when unversioned. */
  library: string | null;
}

export interface ElfDynamic {
  soname: string | null;
  needed: string[];
  imports: ElfSymbol[];
  exports: ElfSymbol[];
}

const SHT_DYNAMIC = 6;
const SHT_DYNSYM = 11;
const SHT_GNU_VERDEF = 0x6ffffffd;
const SHT_GNU_VERNEED = 0x6ffffffe;
const SHT_GNU_VERSYM = 0x6fffffff;
const DT_NEEDED = 1;
const DT_SONAME = 14;
const STT_FUNC = 2;
const STT_OBJECT = 1;
const STT_GNU_IFUNC = 10;

interface Section {
  type: number;
  offset: number;
  size: number;
  link: number;
  entsize: number;
}

function notElf(path: string, why: string): VramfitError {
  return new VramfitError("ERR_INVALID_ARGUMENT", `${path}: not a library vramfit can read (${why})`);
}

/** Reads `path`'s dynamic section, dynamic symbols and symbol versions. */
export function readElfDynamic(path: string): ElfDynamic {
  const fd = openSync(path, "r");
  try {
    const fileSize = fstatSync(fd).size;
    const read = (offset: number, length: number): Buffer => {
      if (offset < 0 || length < 0 || offset + length > fileSize) throw notElf(path, "a section lies outside the file");
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, offset);
      return buffer;
    };
    const header = read(0, 64);
    if (header.readUInt32BE(0) !== 0x7f454c46) throw notElf(path, "no ELF magic");
    if (header[4] !== 2 || header[5] !== 1) throw notElf(path, "not little-endian ELF64");
    const shoff = Number(header.readBigUInt64LE(0x28));
    const shentsize = header.readUInt16LE(0x3a);
    const shnum = header.readUInt16LE(0x3c);
    const table = read(shoff, shentsize * shnum);
    const sections: Section[] = [];
    for (let i = 0; i < shnum; i += 1) {
      const at = i * shentsize;
      sections.push({
        type: table.readUInt32LE(at + 4),
        offset: Number(table.readBigUInt64LE(at + 0x18)),
        size: Number(table.readBigUInt64LE(at + 0x20)),
        link: table.readUInt32LE(at + 0x28),
        entsize: Number(table.readBigUInt64LE(at + 0x38)),
      });
    }
    const body = (s: Section): Buffer => read(s.offset, s.size);
    const cString = (strings: Buffer, at: number): string => {
      const end = strings.indexOf(0, at);
      return strings.toString("latin1", at, end < 0 ? strings.length : end);
    };

    const dynsym = sections.find((s) => s.type === SHT_DYNSYM);
    if (dynsym === undefined) return { soname: null, needed: [], imports: [], exports: [] };
    const dynstr = body(sections[dynsym.link]!);

    // Version index -> (name, library): verneed for imports, verdef for exports.
    const versions = new Map<number, { name: string; library: string | null }>();
    const verneed = sections.find((s) => s.type === SHT_GNU_VERNEED);
    if (verneed !== undefined) {
      const data = body(verneed);
      const strings = body(sections[verneed.link]!);
      for (let at = 0; at < data.length; ) {
        const count = data.readUInt16LE(at + 2);
        const library = cString(strings, data.readUInt32LE(at + 4));
        let aux = at + data.readUInt32LE(at + 8);
        for (let k = 0; k < count; k += 1) {
          versions.set(data.readUInt16LE(aux + 6), { name: cString(strings, data.readUInt32LE(aux + 8)), library });
          aux += data.readUInt32LE(aux + 12);
        }
        const next = data.readUInt32LE(at + 12);
        if (next === 0) break;
        at += next;
      }
    }
    const verdef = sections.find((s) => s.type === SHT_GNU_VERDEF);
    if (verdef !== undefined) {
      const data = body(verdef);
      const strings = body(sections[verdef.link]!);
      for (let at = 0; at < data.length; ) {
        const index = data.readUInt16LE(at + 4);
        const aux = at + data.readUInt32LE(at + 12);
        versions.set(index, { name: cString(strings, data.readUInt32LE(aux)), library: null });
        const next = data.readUInt32LE(at + 16);
        if (next === 0) break;
        at += next;
      }
    }
    const versym = sections.find((s) => s.type === SHT_GNU_VERSYM);
    const versymData = versym === undefined ? undefined : body(versym);

    const symbols = body(dynsym);
    const entsize = dynsym.entsize || 24;
    const imports: ElfSymbol[] = [];
    const exports: ElfSymbol[] = [];
    for (let i = 1; i * entsize < symbols.length; i += 1) {
      const at = i * entsize;
      const name = cString(dynstr, symbols.readUInt32LE(at));
      if (name === "") continue;
      const kind = symbols[at + 4]! & 0xf;
      const defined = symbols.readUInt16LE(at + 6) !== 0;
      // Index 0 and 1 are local and global (unversioned); bit 15 hides a default-less version.
      const index = versymData === undefined ? 1 : versymData.readUInt16LE(i * 2) & 0x7fff;
      const version = index > 1 ? versions.get(index) : undefined;
      const symbol: ElfSymbol = { name, version: version?.name ?? null, library: version?.library ?? null };
      if (!defined) imports.push(symbol);
      else if (kind === STT_FUNC || kind === STT_OBJECT || kind === STT_GNU_IFUNC) exports.push(symbol);
    }

    const needed: string[] = [];
    let soname: string | null = null;
    const dynamic = sections.find((s) => s.type === SHT_DYNAMIC);
    if (dynamic !== undefined) {
      const data = body(dynamic);
      const strings = body(sections[dynamic.link]!);
      for (let at = 0; at + 16 <= data.length; at += 16) {
        const tag = Number(data.readBigInt64LE(at));
        if (tag === 0) break;
        const value = Number(data.readBigUInt64LE(at + 8));
        if (tag === DT_NEEDED) needed.push(cString(strings, value));
        if (tag === DT_SONAME) soname = cString(strings, value);
      }
    }
    return { soname, needed, imports, exports };
  } finally {
    closeSync(fd);
  }
}
