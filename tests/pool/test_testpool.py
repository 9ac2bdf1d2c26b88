"""Checks the test pool against the real bytes recorded from a Morloc 0.98.2 pool.

Run from the repository root:

    python3 -m unittest discover -s tests/pool

The fixtures live in tests/data/wire (a copy of the shared wire fixtures).
"""

from __future__ import annotations

import glob
import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

import testpool as tp

HERE = Path(__file__).resolve().parent
WIRE = HERE.parent / "data" / "wire"
POOL_SCRIPT = HERE / "testpool.py"
SHAPES = tp.PROGRAMS["shapes"]
SNAPSHOT_BASENAME = "morloc-14877-e8d392d64dfa1a2f"
J = tp.parse_schema("j")
# How long a wait for the pool (its start, a reply, its exit) may take before
# the test fails: long, since a loaded machine only makes things slower. No
# test asserts that something happens within a time.
WAIT = 60.0


def wire(name: str) -> bytes:
    return (WIRE / name).read_bytes()


def unique_basename(tag: str) -> str:
    # Live-PID prefix, as the reference requires of every basename.
    return f"morloc-{os.getpid()}-{tag}{os.urandom(4).hex()}"


def int_arg(n: int) -> bytes:
    return tp.make_data_packet(tp.SOURCE_MESG, tp.FORMAT_VOIDSTAR, tp.encode_flat(J, n), J)


def call(mid: int, *args: bytes) -> bytes:
    return tp.make_call_packet(mid, list(args))


def write_server_volume(path: str, placements: list[tuple[int, str, object]]) -> None:
    """A volume 0 as the server would have made it, holding argument values
    at given data offsets (each in its own block)."""
    size = tp.FIRST_VOLUME_SIZE
    buf = bytearray(tp.SHM_HEADER_SIZE + size)
    name = os.path.basename(path).encode()
    tp.SHM_HEADER.pack_into(buf, 0, tp.SHM_MAGIC, name, 0, size, 0, 0, 0, -1)
    for data_off, schema, value in placements:
        data = tp.encode_shm(tp.parse_schema(schema), value, 0, data_off)
        tp.BLOCK_HEADER.pack_into(buf, tp.SHM_HEADER_SIZE + data_off - 16, tp.BLOCK_MAGIC, 1, len(data))
        start = tp.SHM_HEADER_SIZE + data_off
        buf[start:start + len(data)] = data
    Path(path).write_bytes(buf)


class PoolCase(unittest.TestCase):
    """Gives each test a temp dir and a pool whose volumes live in it."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="testpool-")
        self.basename = unique_basename("u")
        self.pools: list[tp.Pool] = []

    def tearDown(self) -> None:
        for p in self.pools:
            p.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)
        for leftover in glob.glob(f"/dev/shm/{self.basename}_*"):
            os.unlink(leftover)

    def pool(self, **kw) -> tp.Pool:
        kw.setdefault("shm_dir", self.dir)
        kw.setdefault("file_dir", self.dir)
        p = tp.Pool(SHAPES, self.dir, self.basename, **kw)
        self.pools.append(p)
        return p

    def reply(self, pool: tp.Pool, request: bytes) -> bytes:
        out = pool.handle_request(request)
        self.assertEqual(out.action, "reply")
        return out.data

    def read_rptr(self, reply: bytes, schema: str, fallback: str | None = None) -> object:
        pkt, _ = tp.parse_packet(reply)
        self.assertEqual(pkt.cmd, tp.data_cmd(tp.SOURCE_RPTR, tp.FORMAT_VOIDSTAR))
        mem = tp.ShmMemory(self.basename, fallback or self.dir, shm_dir=self.dir)
        try:
            buf, pos = mem.resolve(struct.unpack("<q", pkt.payload)[0])
            return tp.read_voidstar(tp.parse_schema(schema), buf, pos, mem)
        finally:
            mem.close()


class TestInlineReplies(PoolCase):
    def inline_names(self, pattern: str) -> list[str]:
        names = []
        for req in sorted(WIRE.glob(pattern)):
            resp = req.with_name(req.name.replace(".req.bin", ".resp.bin"))
            if resp.read_bytes()[13] == tp.SOURCE_MESG:
                names.append(str(req.relative_to(WIRE))[:-len(".req.bin")])
        return names

    def test_every_inline_reply_is_byte_identical(self) -> None:
        names = self.inline_names("*.req.bin")
        self.assertIn("pyFail", names)
        self.assertIn("startup_ping", names)
        self.assertEqual(len(names), 13)
        pool = self.pool()
        for name in names:
            with self.subTest(name=name):
                self.assertEqual(self.reply(pool, wire(name + ".req.bin")), wire(name + ".resp.bin"))

    def test_noshm_inline_variants_are_byte_identical(self) -> None:
        pool = self.pool(no_shm=True)
        names = self.inline_names("variants/noshm_*.req.bin")
        self.assertEqual(names, ["variants/noshm_addOne", "variants/noshm_startup_ping",
                                 "variants/noshm_sumMany"])
        for name in names:
            with self.subTest(name=name):
                self.assertEqual(self.reply(pool, wire(name + ".req.bin")), wire(name + ".resp.bin"))

    def test_inline0_ping_is_echoed(self) -> None:
        pool = self.pool(inline_size=0)
        self.assertEqual(self.reply(pool, wire("variants/inline0_startup_ping.req.bin")),
                         wire("variants/inline0_startup_ping.resp.bin"))

    def test_pyfail_text(self) -> None:
        pkt, _ = tp.parse_packet(self.reply(self.pool(), call(18, int_arg(7))))
        self.assertEqual(pkt.cmd, tp.data_cmd(tp.SOURCE_MESG, tp.FORMAT_TEXT, tp.STATUS_FAIL))
        self.assertEqual(pkt.meta, b"")
        self.assertEqual(pkt.payload.decode(),
                         "python-side failure: boom 7\n  at pyFail [py] (mid=18, shapes.loc:261:12)")


class TestSharedMemoryReplies(PoolCase):
    def test_big_results_go_through_dev_shm(self) -> None:
        pool = self.pool(shm_dir="/dev/shm")
        for name, schema, expected in [("bigList", "aj", list(range(10000))),
                                       ("bigText", "s", "x" * 100000)]:
            with self.subTest(name=name):
                got = self.reply(pool, wire(name + ".req.bin"))
                fixture = wire(name + ".resp.bin")
                self.assertEqual(len(got), len(fixture))
                self.assertEqual(got[:64], fixture[:64])  # header and metadata; payload is a relptr
                relptr = struct.unpack("<q", got[64:])[0]
                self.assertNotEqual(relptr >> 48, 0)  # never the server's volume 0
                self.assertTrue(os.path.exists(f"/dev/shm/{self.basename}_{relptr >> 48}"))
                mem = tp.ShmMemory(self.basename, self.dir)
                try:
                    buf, pos = mem.resolve(relptr)
                    self.assertEqual(tp.read_voidstar(tp.parse_schema(schema), buf, pos, mem), expected)
                finally:
                    mem.close()
        pool.cleanup()
        self.assertEqual(glob.glob(f"/dev/shm/{self.basename}_*"), [])

    def test_snapshot_volumes_are_reproduced_byte_for_byte(self) -> None:
        # The reference pool's volume after bigList(5000), then after its block
        # was released and bigText(70000) reused it.
        self.basename = SNAPSHOT_BASENAME
        pool = self.pool(pick_index=lambda: 1757)
        path = os.path.join(self.dir, f"{SNAPSHOT_BASENAME}_1757")
        first = self.reply(pool, call(16, int_arg(5000)))
        self.assertEqual(first[64:], struct.pack("<q", 0x06DD000000000010))
        self.assertEqual(Path(path).read_bytes(), wire(f"shm/bigList/{SNAPSHOT_BASENAME}_1757"))
        second = self.reply(pool, call(17, int_arg(70000)))
        self.assertEqual(second[64:], struct.pack("<q", 0x06DD000000000010))
        self.assertEqual(Path(path).read_bytes(), wire(f"shm/bigText/{SNAPSHOT_BASENAME}_1757"))

    def test_results_are_released_when_the_next_job_starts(self) -> None:
        pool = self.pool()
        relptr = struct.unpack("<q", self.reply(pool, call(16, int_arg(5000)))[64:])[0]
        vol, off = relptr >> 48, relptr & tp.OFFSET_MASK
        self.assertEqual(pool.arena.volumes[vol].block(off - 16)[:2], (tp.BLOCK_MAGIC, 1))
        pool.begin_job()
        magic, refcount, size = pool.arena.volumes[vol].block(off - 16)
        self.assertEqual((magic, refcount), (tp.BLOCK_MAGIC, 0))
        start = tp.SHM_HEADER_SIZE + off
        self.assertEqual(pool.arena.volumes[vol].mm[start:start + size], bytes(size))

    def test_inline0_variants(self) -> None:
        # The requests point into the server's volume 0, which is not part of
        # the fixtures: rebuild it with plausible arguments at those offsets.
        write_server_volume(os.path.join(self.dir, f"{self.basename}_0"),
                            [(16, "j", 41), (80, "j", 10), (112, "aj", [1, 2, 3, 4])])
        pool = self.pool(inline_size=0)
        for name, schema, expected in [("addOne", "j", 42), ("bigList", "aj", list(range(10))),
                                       ("sumMany", "j", 10)]:
            with self.subTest(name=name):
                got = self.reply(pool, wire(f"variants/inline0_{name}.req.bin"))
                fixture = wire(f"variants/inline0_{name}.resp.bin")
                self.assertEqual(got[:64], fixture[:64])
                self.assertEqual(len(got), len(fixture))
                self.assertEqual(self.read_rptr(got, schema), expected)

    def test_empty_list_in_shm_uses_relnull(self) -> None:
        pool = self.pool(inline_size=0)
        got = self.reply(pool, call(16, int_arg(0)))
        pkt, _ = tp.parse_packet(got)
        relptr = struct.unpack("<q", pkt.payload)[0]
        vol = pool.arena.volumes[relptr >> 48]
        start = tp.SHM_HEADER_SIZE + (relptr & tp.OFFSET_MASK)
        self.assertEqual(bytes(vol.mm[start:start + 16]), struct.pack("<Qq", 0, -1))
        self.assertEqual(vol.block((relptr & tp.OFFSET_MASK) - 16)[2], 24)  # 16 + 7 padding, rounded
        self.assertEqual(self.read_rptr(got, "aj"), [])


class TestFileReplies(PoolCase):
    def test_noshm_biglist_writes_a_msgpack_file(self) -> None:
        pool = self.pool(no_shm=True)
        got = self.reply(pool, wire("variants/noshm_bigList.req.bin"))
        fixture = wire("variants/noshm_bigList.resp.bin")
        self.assertEqual(got[:20], fixture[:20])  # magic .. offset
        self.assertEqual(got[32:64], fixture[32:64])  # metadata
        pkt, _ = tp.parse_packet(got)
        path = pkt.payload.decode()
        self.assertEqual(path, os.path.join(self.dir, f"morloc-pkt-{os.getpid()}-0.mpk"))
        data = Path(path).read_bytes()
        self.assertEqual(tp.msgpack_unpack(tp.parse_schema("aj"), data), list(range(10000)))

    def test_noshm_result_file_matches_the_reference(self) -> None:
        pool = self.pool(no_shm=True)
        pkt, _ = tp.parse_packet(self.reply(pool, call(16, int_arg(4095))))
        self.assertEqual(pkt.cmd, tp.data_cmd(tp.SOURCE_FILE, tp.FORMAT_MSGPACK))
        self.assertEqual(Path(pkt.payload.decode()).read_bytes(),
                         wire("variants/noshm_bigList4095_result_file.mpk"))


class TestRouting(PoolCase):
    """Sizes and routes from the reference's routing table around 64 KiB."""

    def route(self, pool: tp.Pool, mid: int, n: int) -> tuple[int, int]:
        pkt, _ = tp.parse_packet(self.reply(pool, call(mid, int_arg(n))))
        return pkt.cmd[1], 32 + len(pkt.meta) + len(pkt.payload)

    def test_routing_table(self) -> None:
        default, inline1m, noshm = self.pool(), self.pool(inline_size=1000000), self.pool(no_shm=True)
        mesg, rptr, file_ = tp.SOURCE_MESG, tp.SOURCE_RPTR, tp.SOURCE_FILE
        cases = [
            (default, 16, 4094, mesg, 65591), (default, 16, 4095, rptr, 72),
            (default, 17, 65519, mesg, 65599), (default, 17, 65520, mesg, 65600),
            (default, 17, 65521, rptr, 72),
            (inline1m, 16, 4095, mesg, 65607), (inline1m, 16, 10000, mesg, 160087),
            (inline1m, 17, 100000, mesg, 100080),
            (noshm, 16, 4094, mesg, 65591), (noshm, 17, 65520, mesg, 65600),
        ]
        for pool, mid, n, source, size in cases:
            with self.subTest(mid=mid, n=n, inline=pool.inline_size, no_shm=pool.no_shm):
                self.assertEqual(self.route(pool, mid, n), (source, size))
        self.assertEqual(self.route(noshm, 17, 65521)[0], file_)

    def test_env_parsing(self) -> None:
        def cfg(**env):
            p = tp.Pool.from_env(SHAPES, self.dir, self.basename, env)
            return p.inline_size, p.no_shm, p.file_dir
        self.assertEqual(cfg(), (65536, False, None))
        self.assertEqual(cfg(MORLOC_INLINE_SIZE="0", MORLOC_NO_SHM=" Yes ", MORLOC_TMPDIR="/x"),
                         (0, True, "/x"))
        for bad in ("-1", "abc", " 5", "1e3", ""):
            self.assertEqual(cfg(MORLOC_INLINE_SIZE=bad)[0], 65536, bad)
        for falsy in ("0", "no", "", "2"):
            self.assertFalse(cfg(MORLOC_NO_SHM=falsy)[1], falsy)


class TestDecoding(PoolCase):
    EXPECTED_ARGS = {
        "addOne": [41], "bigList": [10000], "bigText": [100000],
        "configFlat": [{"tmpDir": "/x", "numThreads": 9, "removeCaches": True}],
        "hello": ["World"], "mapInc": [[("a", 1), ("b", 2)]], "maybeDouble": [None],
        "mkResult": [7], "noisyAdd": [41], "pyFail": [3], "scaleReal": [1.5, 4.0],
        "sumMany": [[1, 2, 3, 4]], "sumPoints": [[{"x": 1, "y": 2}, {"x": 10, "y": 20}]],
        "swapPair": [(1, "a")], "variants/noshm_addOne": [41], "variants/noshm_bigList": [10000],
        "variants/noshm_sumMany": [[1, 2, 3]],
    }
    EXPECTED_RESULTS = {
        "addOne": 42, "configFlat": "/x:9:True", "hello": "Hello, World!",
        "mapInc": [("a", 2), ("b", 3)], "maybeDouble": None,
        "mkResult": {"status": "ok", "value": 7}, "noisyAdd": 42, "scaleReal": 6.0,
        "sumMany": 10, "sumPoints": {"x": 11, "y": 22}, "swapPair": ("a", 1),
    }

    def test_every_request_argument(self) -> None:
        shm = tp.ShmMemory(self.basename, self.dir)
        for name, expected in self.EXPECTED_ARGS.items():
            with self.subTest(name=name):
                pkt, end = tp.parse_packet(wire(name + ".req.bin"))
                self.assertEqual(end, len(wire(name + ".req.bin")))
                fn = SHAPES[struct.unpack("<I", pkt.cmd[4:])[0]]
                args = tp.call_arguments(pkt)
                values = [tp.decode_data_packet(a, tp.parse_schema(s), shm) for a, s in zip(args, fn.args)]
                self.assertEqual(values, expected)
                # The metadata carries the same schema, hint-free.
                self.assertEqual([tp.metadata_schema(a.meta) for a in args],
                                 [tp.parse_schema(s).render() for s in fn.args])
                # Re-encoding gives back the reference bytes.
                for a, s, v in zip(args, fn.args, values):
                    self.assertEqual(tp.encode_flat(tp.parse_schema(s), v), a.payload)

    def test_every_inline_result(self) -> None:
        for name, expected in self.EXPECTED_RESULTS.items():
            with self.subTest(name=name):
                pkt, _ = tp.parse_packet(wire(name + ".resp.bin"))
                req, _ = tp.parse_packet(wire(name + ".req.bin"))
                fn = SHAPES[struct.unpack("<I", req.cmd[4:])[0]]
                self.assertEqual(tp.metadata_schema(pkt.meta), tp.parse_schema(fn.ret).render())
                schema = tp.parse_schema(fn.ret)
                self.assertEqual(tp.read_voidstar(schema, pkt.payload, 0, tp.FlatMemory(pkt.payload)), expected)

    def test_msgpack_and_file_arguments(self) -> None:
        aj = tp.parse_schema("aj")
        values = list(range(-40, 5000, 7))
        mp = bytes(tp.msgpack_pack(aj, values))
        path = os.path.join(self.dir, "arg.mpk")
        Path(path).write_bytes(mp)
        file_arg = tp.make_data_packet(tp.SOURCE_FILE, tp.FORMAT_MSGPACK, path.encode(), aj)
        mesg_arg = tp.make_data_packet(tp.SOURCE_MESG, tp.FORMAT_MSGPACK, mp, aj)
        pool = self.pool()
        for arg in (file_arg, mesg_arg):
            self.assertEqual(self.reply(pool, call(2, arg)), self.reply(pool, call(2, tp.make_data_packet(
                tp.SOURCE_MESG, tp.FORMAT_VOIDSTAR, tp.encode_flat(aj, values), aj))))
        pkt, _ = tp.parse_packet(self.reply(pool, call(2, mesg_arg)))
        self.assertEqual(tp.read_voidstar(J, pkt.payload, 0, tp.FlatMemory(pkt.payload)), sum(values))

    def test_shm_snapshots(self) -> None:
        # The pointers are in the server's recvfrom() lines of the syscall log.
        log = (WIRE / "shm" / "strace.nexus.txt").read_text()
        replies = [bytes.fromhex(m.replace("\\x", ""))
                   for m in re.findall(r'recvfrom\(6, "((?:\\x[0-9a-f]{2})+)", 65536', log)]
        self.assertEqual(len(replies), 2)
        for reply, name, schema, expected in [(replies[0], "bigList", "aj", list(range(5000))),
                                              (replies[1], "bigText", "s", "x" * 70000)]:
            with self.subTest(name=name):
                pkt, _ = tp.parse_packet(reply)
                self.assertEqual(pkt.cmd, tp.data_cmd(tp.SOURCE_RPTR, tp.FORMAT_VOIDSTAR))
                # Only the fallback directory has these volumes.
                mem = tp.ShmMemory(SNAPSHOT_BASENAME, str(WIRE / "shm" / name), shm_dir=self.dir)
                try:
                    buf, pos = mem.resolve(struct.unpack("<q", pkt.payload)[0])
                    self.assertEqual(tp.read_voidstar(tp.parse_schema(schema), buf, pos, mem), expected)
                finally:
                    mem.close()
                head = (WIRE / "shm" / name / "mcp_result.json").read_text()
                text = json.dumps(expected, separators=(",", ":"))
                self.assertIn(text[:1500], head if schema == "aj" else head.replace('\\"', '"'))


class TestSchemasAndEncodings(unittest.TestCase):
    def flat(self, schema: str, value: object) -> bytes:
        return tp.encode_flat(tp.parse_schema(schema), value)

    def test_table_matches_the_manifest(self) -> None:
        manifest = json.loads((WIRE / "shapes-manifest.json").read_text())
        remote = [c for c in manifest["commands"] if c["type"] == "remote"]
        self.assertEqual(sorted(c["mid"] for c in remote), sorted(tp.SHAPES))
        for c in remote:
            fn = tp.SHAPES[c["mid"]]
            self.assertEqual(fn.name, c["name"])
            self.assertEqual([tp.parse_schema(s).render() for s in fn.args],
                             [tp.parse_schema(a["schema"]).render() for a in c["args"]])
            self.assertEqual(fn.ret, tp.parse_schema(c["return"]["schema"]).render())
        self.assertTrue(set(tp.FAULTS).isdisjoint(tp.SHAPES))

    def test_layouts(self) -> None:
        def check(schema, width, offsets, rendered=None):
            s = tp.parse_schema(schema)
            self.assertEqual((s.width, s.offsets), (width, offsets), schema)
            self.assertEqual(s.render(), rendered or schema)
        check("<dict>m36tmpDirsanumThreadsjcremoveCachesb", 40, [0, 16, 32],
              "m36tmpDirsanumThreadsjcremoveCachesb")
        check("t2i4s", 24, [0, 8])
        check("t3i2saf4", 40, [0, 8, 24])
        check("m21ai11bi1", 2, [0, 1])
        check("t2i1m11xb", 16, [0, 8])
        check("m21pt2i1i41q?m11xb", 16, [0, 8])
        check("&4Treem25valuej8childrena^4Tree", 32, [0, 16])
        check("a<std::vector<$1>>a:3f8", 16, [], "aa:3f8")
        check("<m<n>>t2<a>i1<b>m11x<c>b", 16, [0, 8], "t2i1m11xb")

    def test_schema_errors(self) -> None:
        for bad, msg in [("", "unexpected end of schema"), ("i3", "invalid integer size 3"),
                         ("f2", "invalid float size 2"), ("x", "unknown schema character 'x' at position 0"),
                         ("jj", "trailing characters after schema at position 1"),
                         ("<a", "unclosed '<' in hint"), ("m15ab", "map key extends past end"),
                         ("^1X", "back-reference to undeclared name 'X'")]:
            with self.assertRaises(tp.PoolError, msg=bad) as cm:
                tp.parse_schema(bad)
            self.assertEqual(str(cm.exception), "schema error: " + msg)

    def test_flat_blobs_from_the_spec(self) -> None:
        h = bytes.fromhex
        self.assertEqual(self.flat("ai4", [1, 2, 3]),
                         h("0300000000000000" "4000000000000000") + bytes(48)
                         + h("010000000200000003000000") + bytes(15))
        self.assertEqual(self.flat("as", ["ab", "c"]),
                         h("0200000000000000" "1000000000000000" "0200000000000000" "3000000000000000"
                           "0100000000000000" "3200000000000000") + bytes(0) + b"abc" + bytes(7))
        self.assertEqual(self.flat("as", ["a", ""])[32:48], bytes(16))
        self.assertEqual(self.flat("?i4", 7), h("0800000000000000" "07000000") + bytes(3))
        self.assertEqual(self.flat("j", 1 << 64),
                         h("0200000000000000" "1000000000000000" "0000000000000000" "0100000000000000")
                         + bytes(7))
        self.assertEqual(self.flat("t2i4s", (1, "x")),
                         h("0100000000000000" "0100000000000000" "1800000000000000") + b"x")
        self.assertEqual(self.flat("m21pt2i1i41q?m11xb", {"p": (1, 2), "q": None}),
                         h("0100000002000000ffffffffffffffff"))
        self.assertEqual(self.flat("am21ai11bi1", [{"a": 1, "b": 2}, {"a": 3, "b": 4}])[:20],
                         h("0200000000000000" "1000000000000000" "01020304"))
        a_opt = self.flat("a?s", [None, "q"])
        self.assertEqual(a_opt[16:32], h("ffffffffffffffff" "2000000000000000"))
        self.assertEqual(a_opt[32:48], h("0100000000000000" "3000000000000000"))
        self.assertEqual(a_opt[48], ord("q"))
        tree = {"value": 1, "children": [{"value": 2, "children": []}]}
        blob = self.flat("&4Treem25valuej8childrena^4Tree", tree)
        self.assertEqual(blob[:64], h("0100000000000000" "0100000000000000" "0100000000000000"
                                      "2000000000000000" "0100000000000000" "0200000000000000")
                         + bytes(16))
        config = {"tmpDir": "/t", "numThreads": 4, "removeCaches": True}
        self.assertEqual(len(self.flat("m36tmpDirsanumThreadsjcremoveCachesb", config)), 42)

    def test_round_trips(self) -> None:
        cases = [
            ("&4Treem25valuej8childrena^4Tree",
             {"value": -5, "children": [{"value": 1 << 70, "children": []}, {"value": 0, "children": []}]}),
            ("t5bi1u2f4?f8", (True, -3, 300, 1.5, None)), ("a?j", [None, -(1 << 63), 1 << 63, 7]),
            ("as", ["", "é", "a\x00b"]), ("m2" "1xat2zb" "1ya:2i8", {"x": [(None, False)], "y": [1, 2]}),
            ("F", "/tmp/some file"), ("F", ""),
        ]
        for schema, value in cases:
            with self.subTest(schema=schema):
                s = tp.parse_schema(schema)
                blob = tp.encode_flat(s, value)
                self.assertEqual(len(blob), tp.voidstar_size(s, value))
                self.assertEqual(tp.read_voidstar(s, blob, 0, tp.FlatMemory(blob)), value)
                self.assertEqual(tp.msgpack_unpack(s, bytes(tp.msgpack_pack(s, value))), value)

    def test_msgpack_from_the_spec(self) -> None:
        def mp(schema, value):
            return bytes(tp.msgpack_pack(tp.parse_schema(schema), value)).hex()
        self.assertEqual(mp("u2", 300), "cd012c")
        self.assertEqual(mp("i1", -3), "fd")
        self.assertEqual(mp("f4", 1.5), "cb3ff8000000000000")
        self.assertEqual(mp("as", ["ab", "c"]), "92a26162a163")
        self.assertEqual(mp("j", 1 << 64), "c410" + "00" * 8 + "01" + "00" * 7)
        self.assertEqual(mp("m36tmpDirsanumThreadsjcremoveCachesb",
                            {"tmpDir": "/t", "numThreads": 4, "removeCaches": True}), "93a22f7404c3")
        self.assertEqual(mp("t2i4s", (1, "x")), "9201a178")
        self.assertEqual(mp("j", -129), "d1ff7f")


class TestRequestErrors(PoolCase):
    def fail_text(self, request: bytes) -> str:
        pkt, _ = tp.parse_packet(self.reply(self.pool(), request))
        self.assertEqual(pkt.cmd, tp.data_cmd(tp.SOURCE_MESG, tp.FORMAT_TEXT, tp.STATUS_FAIL))
        return pkt.payload.decode()

    def test_errors(self) -> None:
        self.assertEqual(self.fail_text(int_arg(1)), "Expected a ping or call type packet")
        self.assertEqual(self.fail_text(b"\x00" * 32), "packet error: Malformed morloc packet")
        self.assertEqual(self.fail_text(call(99, int_arg(1))), "99")
        self.assertEqual(self.fail_text(call(1)),
                         "addOne() takes 1 positional argument but 0 were given\n  at addOne [py] (mid=1)")
        self.assertEqual(self.fail_text(call(1, wire("startup_ping.req.bin"))),
                         "packet error: Argument #0 is not a DATA packet (type=2)")
        self.assertTrue(self.fail_text(call(1, tp.make_data_packet(
            tp.SOURCE_MESG, tp.FORMAT_JSON, b"41", J))).startswith("Invalid format from mesg"))
        self.assertTrue(self.fail_text(call(5, int_arg(1000))).endswith("(mid=5)"))

    def test_fault_outcomes(self) -> None:
        pool = self.pool()
        bad = pool.handle_request(call(90, int_arg(1)))
        self.assertEqual((bad.action, bad.data[4:32]), ("reply", int_arg(0)[4:32]))
        self.assertNotEqual(bad.data[:4], wire("addOne.resp.bin")[:4])
        self.assertEqual(pool.handle_request(call(91)).action, "close")
        self.assertEqual(pool.handle_request(call(92, int_arg(1))).action, "exit")
        self.assertEqual(pool.handle_request(call(93)).action, "hang")
        short = pool.handle_request(call(94))
        self.assertEqual(short.action, "reply")
        self.assertEqual(len(short.data), 72)
        self.assertEqual(short.data[:32], int_arg(0)[:32])


# --- the real process -------------------------------------------------------

def roundtrip(path: str, request: bytes, timeout: float = WAIT) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(request)
        chunks = []
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def read_reply(s: socket.socket) -> bytes:
    """Everything the pool sends on `s` until it closes."""
    s.settimeout(WAIT)
    chunks = []
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            s.close()
            return b"".join(chunks)
        chunks.append(chunk)


def wait_catches(pid: int, signum: int, timeout: float = 120.0) -> None:
    """Waits until process `pid` has a handler for `signum` (SigCgt in /proc)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigCgt:") and int(line.split()[1], 16) >> (signum - 1) & 1:
                    return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never caught signal {signum}")


class PoolProcess:
    def __init__(self, env: dict[str, str] | None = None, args: list[str] | None = None):
        self.dir = tempfile.mkdtemp(prefix="tp-")
        self.socket = os.path.join(self.dir, "pipe-py")
        self.basename = unique_basename("e")
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("MORLOC_", "TESTPOOL_"))}
        full_env.update(env or {})
        argv = args if args is not None else [self.socket, self.dir, self.basename]
        self.proc = subprocess.Popen([sys.executable, str(POOL_SCRIPT), *argv], env=full_env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # What wait_stderr read of the pool's stderr (finish adds the rest).
        self.err = b""

    def wait_stderr(self, needle: bytes, timeout: float = WAIT) -> None:
        """Reads the pool's stderr until `needle` has appeared."""
        fd = self.proc.stderr.fileno()
        deadline = time.monotonic() + timeout
        while needle not in self.err:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{needle!r} not on the pool's stderr: {self.err!r}")
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise AssertionError(f"the pool closed stderr without {needle!r}: {self.err!r}")
                self.err += chunk

    def wait_ready(self, timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        ping = wire("startup_ping.req.bin")
        while time.monotonic() < deadline:
            try:
                if roundtrip(self.socket, ping, 0.5) == ping:
                    return
            except OSError:
                pass
            time.sleep(0.01)
        raise AssertionError("pool did not answer a ping")

    def shm_files(self) -> list[str]:
        return glob.glob(f"/dev/shm/{self.basename}_*") + glob.glob(f"/dev/shm/{self.basename}.*")

    def finish(self) -> tuple[int, bytes, bytes]:
        if self.proc.poll() is None:
            self.proc.kill()
        out, err = self.proc.communicate(timeout=WAIT)
        for f in self.shm_files():
            os.unlink(f)
        shutil.rmtree(self.dir, ignore_errors=True)
        return self.proc.returncode, out, self.err + err


class TestProcess(unittest.TestCase):
    def test_serving_one_at_a_time_and_sigterm(self) -> None:
        p = PoolProcess()
        try:
            p.wait_ready()
            self.assertEqual(roundtrip(p.socket, wire("addOne.req.bin")), wire("addOne.resp.bin"))

            results: list[bytes] = []
            lock = threading.Lock()

            def slow() -> None:
                r = roundtrip(p.socket, call(19, int_arg(200)))
                with lock:
                    results.append(r)
            threads = [threading.Thread(target=slow) for _ in range(4)]
            start = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - start
            self.assertEqual(results, [self.expected_int(200)] * 4)
            # One worker, one call at a time, like the real Python pool
            # (measured there: 4 x 300 ms took 1.20 s).
            self.assertGreaterEqual(elapsed, 0.8)

            big = roundtrip(p.socket, wire("bigList.req.bin"))
            self.assertEqual(big[:64], wire("bigList.resp.bin")[:64])
            mem = tp.ShmMemory(p.basename, p.dir)
            try:
                buf, pos = mem.resolve(struct.unpack("<q", big[64:72])[0])
                self.assertEqual(tp.read_voidstar(tp.parse_schema("aj"), buf, pos, mem), list(range(10000)))
            finally:
                mem.close()
            self.assertEqual(len(p.shm_files()), 1)

            self.assertEqual(roundtrip(p.socket, wire("noisyAdd.req.bin")), wire("noisyAdd.resp.bin"))
            self.assertNotEqual(roundtrip(p.socket, call(90))[:4], wire("addOne.resp.bin")[:4])
            self.assertEqual(roundtrip(p.socket, call(91)), b"")
            self.assertEqual(len(roundtrip(p.socket, call(94))), 72)
            self.assertEqual(roundtrip(p.socket, b"\x00" * 32),
                             tp.make_fail_packet("packet error: Malformed morloc packet"))
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as hung:
                hung.connect(p.socket)
                hung.sendall(call(93))
                hung.settimeout(0.05)
                with self.assertRaises(socket.timeout):
                    hung.recv(1)

                p.proc.send_signal(signal.SIGTERM)
                self.assertEqual(p.proc.wait(timeout=WAIT), 0)
            self.assertFalse(os.path.exists(p.socket))
            self.assertEqual(p.shm_files(), [])
        finally:
            code, out, err = p.finish()
        self.assertIn(b"noisyAdd: adding one to 41\n", out)
        self.assertIn(b"noisyAdd: this line goes to stderr (41)\n", err)

    def expected_int(self, n: int) -> bytes:
        return tp.make_data_packet(tp.SOURCE_MESG, tp.FORMAT_VOIDSTAR, tp.encode_flat(J, n), J)

    def test_threads_mode_serves_calls_concurrently(self) -> None:
        p = PoolProcess({"TESTPOOL_WORKERS": "threads"})
        try:
            p.wait_ready()
            socks = []
            start = time.monotonic()
            for _ in range(4):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(p.socket)
                s.sendall(call(19, int_arg(200)))
                socks.append(s)
            replies = [read_reply(s) for s in socks]
            self.assertEqual(replies, [self.expected_int(200)] * 4)
            self.assertLess(time.monotonic() - start, 0.6)
        finally:
            p.finish()

    def test_block_is_freed_when_the_next_connection_is_accepted(self) -> None:
        # Measured on the real pool: the previous result's block is zeroed as
        # soon as the next connection reaches the worker, before any request.
        p = PoolProcess()
        try:
            p.wait_ready()
            big = roundtrip(p.socket, call(16, int_arg(5000)))
            relptr = struct.unpack("<q", big[64:72])[0]
            mem = tp.ShmMemory(p.basename, p.dir)
            try:
                buf, pos = mem.resolve(relptr)
                self.assertEqual(tp.BLOCK_HEADER.unpack_from(buf, pos - 16)[1], 1)
                time.sleep(0.1)
                self.assertEqual(tp.BLOCK_HEADER.unpack_from(buf, pos - 16)[1], 1)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
                    idle.connect(p.socket)
                    deadline = time.monotonic() + 2
                    while tp.BLOCK_HEADER.unpack_from(buf, pos - 16)[1] and time.monotonic() < deadline:
                        time.sleep(0.005)
                    self.assertEqual(tp.BLOCK_HEADER.unpack_from(buf, pos - 16)[1], 0)
                    self.assertEqual(bytes(buf[pos:pos + 16]), bytes(16))
            finally:
                mem.close()
        finally:
            p.finish()

    def test_a_reply_larger_than_the_socket_buffer_fails_like_the_real_pool(self) -> None:
        # Measured on the real pool with MORLOC_INLINE_SIZE=1e8: a 480 KB
        # inline reply read late stops at EAGAIN after 219264 bytes, and the
        # pool logs "job failed: ... Failed to send over client N".
        p = PoolProcess({"MORLOC_INLINE_SIZE": "100000000"})
        try:
            p.wait_ready()
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(p.socket)
                s.sendall(call(16, int_arg(30000)))
                # Not read until the pool has given up on the full buffer.
                p.wait_stderr(b"job failed: IPC error: Failed to send over client")
                got = read_reply(s)
            self.assertEqual(len(got) < 480087, True, len(got))
            self.assertEqual(got[:4], struct.pack("<I", tp.PACKET_MAGIC))
            small = roundtrip(p.socket, call(16, int_arg(10)))
            self.assertEqual(small[13], tp.SOURCE_MESG)
        finally:
            _, _, err = p.finish()
        self.assertIn(b"job failed: IPC error: Failed to send over client", err)

    def test_race_mode_frees_the_block_before_the_last_byte(self) -> None:
        p = PoolProcess({"TESTPOOL_RACE_MS": "300"})
        try:
            p.wait_ready()
            # The second connection waits in the backlog before the call is
            # sent, so it is there however late the pool gets to its wait.
            first = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            first.connect(p.socket)
            second = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            second.connect(p.socket)
            first.sendall(call(16, int_arg(5000)))
            reply = read_reply(first)
            relptr = struct.unpack("<q", reply[64:72])[0]
            mem = tp.ShmMemory(p.basename, p.dir)
            try:
                buf, pos = mem.resolve(relptr)
                self.assertEqual(tp.BLOCK_HEADER.unpack_from(buf, pos - 16)[1], 0)
            finally:
                mem.close()
            second.sendall(call(1, int_arg(1)))
            self.assertEqual(read_reply(second), self.expected_int(2))
            # Without a waiting connection the reply simply completes late.
            start = time.monotonic()
            alone = roundtrip(p.socket, call(16, int_arg(5000)))
            self.assertGreaterEqual(time.monotonic() - start, 0.25)
            self.assertEqual(len(alone), 72)
        finally:
            p.finish()

    def test_fault_92_kills_the_process(self) -> None:
        p = PoolProcess()
        try:
            p.wait_ready()
            self.assertEqual(roundtrip(p.socket, call(92, int_arg(1))), b"")
            self.assertEqual(p.proc.wait(timeout=WAIT), 3)
        finally:
            p.finish()

    def test_health_and_usage(self) -> None:
        ok = subprocess.run([sys.executable, str(POOL_SCRIPT), "--health"], capture_output=True, timeout=WAIT)
        self.assertEqual((ok.returncode, ok.stdout), (0, b'{"status":"ok","version":"0.98.2"}\n'))
        bad = subprocess.run([sys.executable, str(POOL_SCRIPT), "a", "b"], capture_output=True, timeout=WAIT)
        self.assertEqual((bad.returncode, bad.stdout), (1, b""))
        self.assertTrue(bad.stderr.startswith(b"Usage: testpool.py <socket_path> <tmpdir> <shm_basename>"))

    def test_never_listen_and_die_after(self) -> None:
        quiet = PoolProcess({"TESTPOOL_NEVER_LISTEN": "1"})
        dying = PoolProcess({"TESTPOOL_DIE_AFTER_MS": "150", "TESTPOOL_STARTUP_DELAY_MS": "50"})
        try:
            Path(quiet.socket).write_bytes(b"")  # a stale file is left alone when never listening
            dying.wait_ready()
            self.assertEqual(dying.proc.wait(timeout=WAIT), 3)
            self.assertIsNone(quiet.proc.poll())
            self.assertEqual(Path(quiet.socket).read_bytes(), b"")
            # A loaded machine may not have run the pool's start far enough to
            # catch SIGTERM yet: wait until the kernel says it does.
            wait_catches(quiet.proc.pid, signal.SIGTERM)
            quiet.proc.send_signal(signal.SIGTERM)
            self.assertEqual(quiet.proc.wait(timeout=WAIT), 0)
        finally:
            quiet.finish()
            dying.finish()

    def test_parent_death_terminates_the_pool(self) -> None:
        d = tempfile.mkdtemp(prefix="tp-")
        sock = os.path.join(d, "pipe-py")
        launcher = (
            "import subprocess, sys, time, os\n"
            "p = subprocess.Popen([sys.executable] + sys.argv[1:])\n"
            "deadline = time.monotonic() + 60\n"
            "while not os.path.exists(sys.argv[2]) and time.monotonic() < deadline:\n"
            "    time.sleep(0.01)\n"
        )
        try:
            subprocess.run([sys.executable, "-c", launcher, str(POOL_SCRIPT), sock, d,
                            unique_basename("d")], timeout=2 * WAIT, check=True)
            deadline = time.monotonic() + WAIT
            while os.path.exists(sock) and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertFalse(os.path.exists(sock))
        finally:
            shutil.rmtree(d, ignore_errors=True)


class TestCallTrace(PoolCase):
    def test_every_call_is_traced_with_its_start_and_end(self) -> None:
        trace = os.path.join(self.dir, "calls.trace")
        os.environ["TESTPOOL_TRACE"] = trace
        try:
            pool = self.pool()
            self.reply(pool, call(1, int_arg(41)))
            self.reply(pool, call(19, int_arg(20)))  # slowEcho 20 ms
        finally:
            del os.environ["TESTPOOL_TRACE"]
        lines = [line.split(" ") for line in Path(trace).read_text().splitlines()]
        self.assertEqual([(kind, name, pid) for kind, name, pid, _ in lines], [
            ("start", "addOne", str(os.getpid())), ("end", "addOne", str(os.getpid())),
            ("start", "slowEcho", str(os.getpid())), ("end", "slowEcho", str(os.getpid())),
        ])
        times = [int(ns) for *_, ns in lines]
        self.assertEqual(times, sorted(times))
        # slowEcho slept its 20 ms between its two lines.
        self.assertGreaterEqual(times[3] - times[2], 20_000_000)

    def test_without_the_variable_nothing_is_written(self) -> None:
        self.assertNotIn("TESTPOOL_TRACE", os.environ)
        self.reply(self.pool(), call(1, int_arg(1)))
        self.assertEqual(os.listdir(self.dir), [])


class TestHold(PoolCase):
    def test_a_held_slow_echo_returns_only_once_released(self) -> None:
        release = os.path.join(self.dir, "release")
        os.environ["TESTPOOL_HOLD"] = release
        try:
            pool = self.pool()
            # Other functions are never held.
            self.reply(pool, call(1, int_arg(41)))
            done = threading.Event()
            worker = threading.Thread(
                target=lambda: (self.reply(pool, call(19, int_arg(0))), done.set()))
            worker.start()
            self.assertFalse(done.wait(0.2), "returned while held")
            Path(release).write_text("")
            self.assertTrue(done.wait(WAIT), "not released")
            worker.join()
            # Released: later calls return at once.
            self.reply(pool, call(19, int_arg(0)))
        finally:
            del os.environ["TESTPOOL_HOLD"]


class _Thread:
    """One thread that runs what it is given, so a test can say which thread
    handles which request."""

    def __init__(self) -> None:
        self.todo: list = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            with self.cond:
                self.cond.wait_for(lambda: bool(self.todo))
                fn, box = self.todo.pop(0)
            try:
                box.append(("ok", fn()))
            except BaseException as e:  # handed back to the caller
                box.append(("err", e))
            with self.cond:
                self.cond.notify_all()

    def run(self, fn):
        box: list = []
        with self.cond:
            self.todo.append((fn, box))
            self.cond.notify_all()
            if not self.cond.wait_for(lambda: bool(box), timeout=WAIT):
                raise AssertionError(f"the thread did not finish within {WAIT:.0f} s")
        kind, value = box[0]
        if kind == "err":
            raise value
        return value


class TestCppFreeing(PoolCase):
    """cpp mode: like a C++ pool thread, each thread frees its own results
    when it starts its next local call, and nothing else frees them."""

    def refcount(self, pool: tp.Pool, reply: bytes) -> int:
        relptr = struct.unpack("<q", reply[64:72])[0]
        vol, off = relptr >> 48, relptr & tp.OFFSET_MASK
        return pool.arena.volumes[vol].block(off - 16)[1]

    def test_a_thread_frees_only_its_own_results_at_its_next_local_call(self) -> None:
        pool = self.pool(per_thread=True)
        a, b = _Thread(), _Thread()
        big = a.run(lambda: self.reply(pool, call(16, int_arg(5000))))
        self.assertEqual(big[13], tp.SOURCE_RPTR)
        other = b.run(lambda: self.reply(pool, call(16, int_arg(6000))))
        self.assertEqual(self.read_rptr(big, "aj"), list(range(5000)))
        # Another thread's calls, a ping, a remote call and a request that
        # does not parse, even on the same thread, free nothing.
        c = _Thread()
        c.run(lambda: self.reply(pool, call(1, int_arg(1))))
        a.run(lambda: self.reply(pool, wire("startup_ping.req.bin")))
        a.run(lambda: self.reply(pool, tp.make_call_packet(1, [int_arg(1)], entrypoint=1)))
        a.run(lambda: self.reply(pool, b"\x00" * 32))
        self.assertEqual(self.refcount(pool, big), 1)
        self.assertEqual(self.read_rptr(big, "aj"), list(range(5000)))
        # The thread's next local call frees its block, and only its own.
        self.assertEqual(a.run(lambda: self.reply(pool, call(1, int_arg(1)))), tp.make_data_packet(
            tp.SOURCE_MESG, tp.FORMAT_VOIDSTAR, tp.encode_flat(J, 2), J))
        self.assertEqual(self.refcount(pool, big), 0)
        self.assertEqual(self.refcount(pool, other), 1)
        self.assertEqual(self.read_rptr(other, "aj"), list(range(6000)))
        b.run(lambda: self.reply(pool, call(1, int_arg(1))))
        self.assertEqual(self.refcount(pool, other), 0)

    def test_the_default_mode_still_frees_everything_at_the_next_job(self) -> None:
        pool = self.pool()
        a, b = _Thread(), _Thread()
        big = a.run(lambda: self.reply(pool, call(16, int_arg(5000))))
        b.run(lambda: self.reply(pool, wire("startup_ping.req.bin")))
        self.assertEqual(self.refcount(pool, big), 0)

    def test_from_env_selects_the_mode(self) -> None:
        env = {"TESTPOOL_WORKERS": "cpp"}
        self.assertTrue(tp.Pool.from_env(SHAPES, self.dir, self.basename, env).per_thread)
        for workers in ("threads", "1", ""):
            env = {"TESTPOOL_WORKERS": workers}
            self.assertFalse(tp.Pool.from_env(SHAPES, self.dir, self.basename, env).per_thread)


class TestJobStack(unittest.TestCase):
    """The cpp mode's job queue, as the real pool loop keeps it."""

    def test_newest_first_and_workers_added_only_when_all_are_busy(self) -> None:
        stack = tp._JobStack()
        stack.total = 1
        self.assertFalse(stack.should_grow())
        stack.set_busy(1)
        self.assertTrue(stack.should_grow())
        self.assertEqual(stack.total, 2)
        self.assertFalse(stack.should_grow())
        a, b = socket.socketpair()
        try:
            stack.push(a)
            stack.push(b)
            self.assertIs(stack.pop(0.01), b)
            self.assertIs(stack.pop(0.01), a)
            self.assertIsNone(stack.pop(0.01))
        finally:
            a.close()
            b.close()
        # Idle workers leave, but never the last one.
        self.assertTrue(stack.may_retire())
        self.assertFalse(stack.may_retire())
        self.assertEqual(stack.total, 1)

    def test_a_racing_worker_gets_the_next_connection_first(self) -> None:
        stack = tp._JobStack()
        a, b = socket.socketpair()
        got: list = []
        try:
            racer = threading.Thread(target=lambda: got.append(stack.pop_racing(WAIT)))
            racer.start()
            deadline = time.monotonic() + WAIT
            while not stack.racers and time.monotonic() < deadline:
                time.sleep(0.001)
            stack.push(a)
            racer.join(WAIT)
            self.assertEqual(got, [a])
            self.assertIsNone(stack.pop(0.01))
            # Without a connection in time, nothing; a later one goes on the stack.
            self.assertIsNone(stack.pop_racing(0.01))
            self.assertEqual(stack.racers, [])
            stack.push(b)
            self.assertIs(stack.pop(0.01), b)
        finally:
            a.close()
            b.close()


class TestCppProcess(unittest.TestCase):
    def test_cpp_mode_runs_calls_on_threads_at_once(self) -> None:
        d = tempfile.mkdtemp(prefix="tp-trace-")
        trace = os.path.join(d, "calls.trace")
        release = os.path.join(d, "release")
        p = PoolProcess({"TESTPOOL_WORKERS": "cpp", "TESTPOOL_TRACE": trace, "TESTPOOL_HOLD": release})
        try:
            p.wait_ready()
            socks = []
            for _ in range(6):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(p.socket)
                s.sendall(call(19, int_arg(300)))
                socks.append(s)
            # Each call is held in the pool until all six have started.
            deadline = time.monotonic() + WAIT
            while not os.path.exists(trace) or Path(trace).read_text().count("start ") < 6:
                self.assertLess(time.monotonic(), deadline, "six calls never ran at once")
                time.sleep(0.005)
            Path(release).write_text("")
            expected = tp.make_data_packet(tp.SOURCE_MESG, tp.FORMAT_VOIDSTAR, tp.encode_flat(J, 300), J)
            self.assertEqual([read_reply(s) for s in socks], [expected] * 6)
            lines = [line.split(" ") for line in Path(trace).read_text().splitlines()]
            starts = [int(ns) for kind, _, _, ns in lines if kind == "start"]
            ends = [int(ns) for kind, _, _, ns in lines if kind == "end"]
            self.assertEqual((len(starts), len(ends)), (6, 6))
            # Every call started before the first one ended: they ran at once.
            self.assertLess(max(starts), min(ends), lines)
        finally:
            p.finish()
            shutil.rmtree(d, ignore_errors=True)

    def race(self, second_request: bytes) -> tuple[int, bytes]:
        """cpp mode with TESTPOOL_RACE_MS: a large result, then a second
        connection while its reply's last byte is held back; returns the
        block's reference count once the reply is complete, and the second
        reply."""
        # The second connection must come while the reply is held back: the
        # hold lasts as long as any wait here, and ends when it comes.
        p = PoolProcess({"TESTPOOL_WORKERS": "cpp", "TESTPOOL_RACE_MS": str(int(WAIT * 1000))})
        try:
            p.wait_ready()
            first = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            first.connect(p.socket)
            first.sendall(call(16, int_arg(5000)))
            # The reply's first byte: the pool is holding back its last one.
            first.settimeout(30.0)
            head = first.recv(1)
            second = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            second.connect(p.socket)
            second.sendall(second_request)
            reply = head + read_reply(first)
            self.assertEqual(len(reply), 72)
            mem = tp.ShmMemory(p.basename, p.dir)
            try:
                buf, pos = mem.resolve(struct.unpack("<q", reply[64:72])[0])
                refcount = tp.BLOCK_HEADER.unpack_from(buf, pos - 16)[1]
                if refcount:
                    got = tp.read_voidstar(tp.parse_schema("aj"), buf, pos, mem)
                    self.assertEqual(got, list(range(5000)))
                else:
                    self.assertEqual(bytes(buf[pos:pos + 16]), bytes(16))
            finally:
                mem.close()
            return refcount, read_reply(second)
        finally:
            p.finish()

    def test_race_mode_frees_the_block_when_the_thread_starts_its_next_call(self) -> None:
        refcount, second = self.race(call(1, int_arg(1)))
        self.assertEqual(refcount, 0)
        self.assertEqual(second, tp.make_data_packet(tp.SOURCE_MESG, tp.FORMAT_VOIDSTAR,
                                                     tp.encode_flat(J, 2), J))

    def test_race_mode_a_ping_frees_nothing(self) -> None:
        ping = wire("startup_ping.req.bin")
        refcount, second = self.race(ping)
        self.assertEqual(refcount, 1)
        self.assertEqual(second, ping)


if __name__ == "__main__":
    unittest.main()
