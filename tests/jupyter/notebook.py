"""Drives a runsbx kernelspec the way Jupyter clients do: nbclient runs a notebook, then
jupyter_client's KernelManager interrupts, restarts and shuts a kernel down. Prints `ok NAME`
per check; any failure raises. usage: python notebook.py KERNEL_NAME
(JUPYTER_PATH must hold kernels/KERNEL_NAME)."""
import sys
import time

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

name = sys.argv[1]


def outputs(cell):
    return cell.get("outputs", [])


def text_of(cell):
    return "".join(o.get("text", "") for o in outputs(cell) if o.get("output_type") == "stream")


def errors_of(cell):
    return [o["ename"] for o in outputs(cell) if o.get("output_type") == "error"]


cells = {
    "define": "x = 6 * 7",
    "state": "print(x)",
    "exception": "1 / 0",
    "plot": ("import numpy as np\nimport matplotlib.pyplot as plt\n"
             "plt.plot(np.arange(10) ** 2)\nplt.show()"),
    "pandas": "import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})",
    "network": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)",
    "outside": "open('/etc/shadow').read()",
    "host_file": "import os\nprint(sorted(os.listdir('/')))",
    "subprocess": "import subprocess\nsubprocess.run(['/bin/true'])",
    "long": "import time\ntime.sleep(600)",
    "after_interrupt": "print('still', x)",
}
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell(src, metadata={"name": key}) for key, src in cells.items()]
# The long cell is interrupted after 15 s; the others get two minutes (matplotlib builds its
# font cache in each fresh workdir, which a loaded machine can stretch past 15 s).
client = NotebookClient(nb, kernel_name=name, timeout=120, allow_errors=True, interrupt_on_timeout=True,
                        startup_timeout=120,
                        timeout_func=lambda cell: 15 if cell.metadata.get("name") == "long" else 120)
t0 = time.monotonic()
client.execute()
print(f"notebook ran in {time.monotonic() - t0:.1f} s", file=sys.stderr)
got = {c.metadata["name"]: c for c in nb.cells}

assert text_of(got["state"]).strip() == "42", outputs(got["state"])
print("ok state")
assert errors_of(got["exception"]) == ["ZeroDivisionError"], outputs(got["exception"])
print("ok exception")
pngs = [o for o in outputs(got["plot"]) if "image/png" in o.get("data", {})]
assert pngs and len(pngs[0]["data"]["image/png"]) > 1000, outputs(got["plot"])
print("ok image/png")
html = [o for o in outputs(got["pandas"]) if "text/html" in o.get("data", {})]
assert html and "<table" in html[0]["data"]["text/html"], outputs(got["pandas"])
print("ok pandas html")
# Leaving the sandbox fails there as it does in `runsbx sandbox`.
assert errors_of(got["network"]) and errors_of(got["network"])[0] in ("OSError", "PermissionError"), \
    outputs(got["network"])
print("denied network")
assert errors_of(got["outside"]) in (["FileNotFoundError"], ["PermissionError"]), outputs(got["outside"])
print("denied outside")
assert errors_of(got["host_file"]) == ["PermissionError"], outputs(got["host_file"])
print("denied root listing")
assert errors_of(got["subprocess"]) == ["PermissionError"], outputs(got["subprocess"])
print("denied subprocess")
assert errors_of(got["long"]) == ["KeyboardInterrupt"], outputs(got["long"])
print("ok interrupt")
assert text_of(got["after_interrupt"]).strip() == "still 42", outputs(got["after_interrupt"])
print("ok state after interrupt")

# A client that manages the kernel itself: interrupt, restart, shutdown.
km = KernelManager(kernel_name=name)
km.start_kernel()
kc = km.client()
kc.start_channels()
try:
    kc.wait_for_ready(timeout=120)
    reply = kc.execute_interactive("y = 1", timeout=30)
    assert reply["content"]["status"] == "ok", reply
    msg_id = kc.execute("import time; time.sleep(600)")
    time.sleep(1)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=30)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt", reply
    print("ok KernelManager interrupt")
    first = km.provisioner.pid if km.provisioner else None
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=120)
    seen = []
    reply = kc.execute_interactive("print('y' in dir())", timeout=30,
                                   output_hook=lambda m: seen.append(m["content"].get("text", "")))
    assert reply["content"]["status"] == "ok" and "".join(seen).strip() == "False", (reply, seen)
    assert km.provisioner.pid != first
    print("ok restart")
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=False)
assert not km.is_alive()
print("ok shutdown")
