"""A broad sweep of the standard library as LLM-written code uses it. Each
check prints `ok NAME`; the ones the sandbox forbids by design (a new
process, a socket) must fail with PermissionError, and print `denied NAME`."""
import os
import sys

wd = os.getcwd()
failed = []


def check(name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the sweep reports every failure
        failed.append(name)
        print("FAIL", name, type(e).__name__, e, flush=True)
    else:
        print("ok", name, flush=True)


def denied(name, fn):
    try:
        fn()
    except PermissionError:
        print("denied", name, flush=True)
    except Exception as e:  # noqa: BLE001
        failed.append(name)
        print("FAIL", name, "expected PermissionError, got", type(e).__name__, e, flush=True)
    else:
        failed.append(name)
        print("FAIL", name, "was allowed", flush=True)


def threads():
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as ex:
        assert sum(ex.map(lambda x: x * x, range(100))) == 328350


def files():
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        assert d.startswith(wd)
        p = os.path.join(d, "f.txt")
        with open(p, "w") as f:
            f.write("x" * 1000)
        shutil.copy(p, p + ".bak")
        os.rename(p + ".bak", p + ".2")
        assert sorted(os.listdir(d)) == ["f.txt", "f.txt.2"]
        os.truncate(p, 10)
        assert os.path.getsize(p) == 10
    with tempfile.NamedTemporaryFile(dir=wd) as f:
        f.write(b"y")
        f.flush()


def archives():
    import tarfile
    import zipfile

    z = os.path.join(wd, "a.zip")
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.txt", "hello" * 100)
    with zipfile.ZipFile(z) as zf:
        assert zf.read("a.txt") == b"hello" * 100
    t = os.path.join(wd, "a.tar.xz")
    with tarfile.open(t, "w:xz") as tf:
        tf.add(z, arcname="a.zip")
    with tarfile.open(t) as tf:
        assert tf.getnames() == ["a.zip"]


def compression():
    import bz2
    import gzip
    import lzma
    import zlib

    data = b"abc" * 10000
    for mod in (bz2, gzip, lzma, zlib):
        assert mod.decompress(mod.compress(data)) == data


def crypto():
    import hashlib
    import hmac
    import secrets
    import ssl

    assert hashlib.sha256(b"x").hexdigest().startswith("2d711642")
    hmac.new(b"k", b"m", "sha256").hexdigest()
    assert len(secrets.token_bytes(16)) == 16
    ctx = ssl.create_default_context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED


def text_and_data():
    import csv
    import decimal
    import io
    import json
    import re
    import unicodedata
    import xml.etree.ElementTree as ET

    assert json.loads(json.dumps({"a": [1, 2.5, None]})) == {"a": [1, 2.5, None]}
    rows = list(csv.reader(io.StringIO("a,b\n1,2\n")))
    assert rows == [["a", "b"], ["1", "2"]]
    assert decimal.Decimal("1.1") + decimal.Decimal("2.2") == decimal.Decimal("3.3")
    assert unicodedata.name("é") == "LATIN SMALL LETTER E WITH ACUTE"
    assert ET.fromstring("<a><b>x</b></a>").find("b").text == "x"
    assert re.sub(r"\d+", "#", "a1b22") == "a#b#"


def time_and_locale():
    import datetime
    import locale
    import time
    import zoneinfo

    locale.setlocale(locale.LC_ALL, "")
    t = datetime.datetime(2024, 7, 1, 12, tzinfo=zoneinfo.ZoneInfo("America/New_York"))
    assert t.utcoffset() == datetime.timedelta(hours=-4)
    time.localtime()
    time.strftime("%c")


def system_info():
    import platform
    import resource

    n = os.cpu_count()
    assert n and n >= 1, n
    assert len(os.sched_getaffinity(0)) >= 1
    platform.uname()
    resource.getrlimit(resource.RLIMIT_NOFILE)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0
    with open("/proc/self/status") as f:
        assert any(line.startswith("VmRSS:") for line in f)


def asyncio_loop():
    import asyncio

    async def main():
        await asyncio.sleep(0.01)
        r = await asyncio.gather(*(asyncio.to_thread(pow, 2, i) for i in range(5)))
        return r

    assert asyncio.run(main()) == [1, 2, 4, 8, 16]


def ipc_inside():
    import mmap
    import select
    import socket

    a, b = socket.socketpair()
    a.sendall(b"ping")
    assert select.select([b], [], [], 1)[0]
    assert b.recv(4) == b"ping"
    r, w = os.pipe()
    os.write(w, b"x")
    assert os.read(r, 1) == b"x"
    with open(os.path.join(wd, "m.bin"), "wb+") as f:
        f.write(b"\0" * 4096)
        f.flush()
        m = mmap.mmap(f.fileno(), 4096)
        m[0:2] = b"hi"
        m.close()


def locks():
    import fcntl

    with open(os.path.join(wd, "lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        fcntl.flock(f, fcntl.LOCK_UN)
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(f, fcntl.LOCK_UN)


def ctypes_libc():
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(None)
    assert libc.strlen(b"abcd") == 4


def logging_to_file():
    import logging

    path = os.path.join(wd, "run.log")
    h = logging.FileHandler(path)
    log = logging.getLogger("sweep")
    log.addHandler(h)
    log.warning("hello")
    h.close()
    assert "hello" in open(path).read()


def misc():
    import random
    import statistics
    import uuid

    random.seed(1)
    assert statistics.mean([1, 2, 3]) == 2
    uuid.uuid4()
    uuid.uuid1()


for name, fn in [("threads", threads), ("files", files), ("archives", archives),
                 ("compression", compression), ("crypto", crypto), ("text-and-data", text_and_data),
                 ("time-and-locale", time_and_locale), ("system-info", system_info),
                 ("asyncio", asyncio_loop), ("ipc-inside", ipc_inside), ("locks", locks),
                 ("ctypes", ctypes_libc), ("logging", logging_to_file), ("misc", misc)]:
    check(name, fn)


def spawn():
    import subprocess

    subprocess.run(["/bin/true"])


def connect():
    import socket

    socket.create_connection(("127.0.0.1", 9), timeout=1)


def process_pool():
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2) as ex:
        list(ex.map(abs, [1]))


denied("subprocess", spawn)
denied("socket", connect)
denied("fork", os.fork)

sys.exit(1 if failed else 0)
