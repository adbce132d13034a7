"""sqlite databases on files in the workdir, as an analysis step keeps its
results: rollback journal and WAL, two connections, a transaction that
waits for a lock, then dbm and shelve."""
import dbm
import os
import shelve
import sqlite3
import threading

wd = os.getcwd()


def ok(name):
    print("ok", name, flush=True)


db = os.path.join(wd, "results.sqlite")
con = sqlite3.connect(db)
con.execute("create table t (k text primary key, v real)")
con.executemany("insert into t values (?, ?)", [(f"k{i}", i * 1.5) for i in range(1000)])
con.commit()
assert con.execute("select count(*), sum(v) from t").fetchone() == (1000, 749250.0)
ok("sqlite-journal")

assert con.execute("pragma journal_mode=wal").fetchone()[0] == "wal"
other = sqlite3.connect(db, timeout=10, check_same_thread=False)
reader = sqlite3.connect(db)
con.execute("begin immediate")
con.execute("update t set v = -1 where k = 'k1'")
# A second writer waits for the lock (F_SETLK retried by sqlite's busy handler)
# and goes through once the first commits; a reader meanwhile sees the last
# committed value.
done = []
th = threading.Thread(target=lambda: (other.execute("update t set v = -2 where k = 'k2'"),
                                      other.commit(), done.append(1)))
th.start()
assert reader.execute("select v from t where k = 'k1'").fetchone()[0] == 1.5
reader.close()
con.commit()
th.join(10)
assert done == [1]
assert con.execute("select v from t where k in ('k1','k2') order by k").fetchall() == [(-1.0,), (-2.0,)]
con.close()
other.close()
ok("sqlite-wal-two-connections")

with dbm.open(os.path.join(wd, "kv"), "c") as d:
    d[b"a"] = b"1"
with dbm.open(os.path.join(wd, "kv"), "r") as d:
    assert d[b"a"] == b"1"
with shelve.open(os.path.join(wd, "shelf")) as s:
    s["x"] = {"y": [1, 2]}
with shelve.open(os.path.join(wd, "shelf")) as s:
    assert s["x"] == {"y": [1, 2]}
ok("dbm-shelve")
