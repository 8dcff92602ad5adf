"""What the tritonclient test scripts (serve_client.py, serve_tensor.py) share:
a check that prints `ok <name>`, an assertion that names what failed, and
an expected InferenceServerException with its status and message."""

from tritonclient.utils import InferenceServerException


def ok(name):
    print("ok", name, flush=True)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_error(fn, status, contains, what):
    """fn() must raise InferenceServerException with this status and message part."""
    try:
        fn()
    except InferenceServerException as e:
        expect(str(e.status()) == str(status), f"{what}: status {e.status()!r}, wanted {status!r} ({e.message()})")
        expect(contains in e.message(), f"{what}: message {e.message()!r} lacks {contains!r}")
        return
    raise AssertionError(f"{what}: no error")
