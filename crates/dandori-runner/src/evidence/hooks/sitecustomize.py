# Written by dandori into its run directory and put first on PYTHONPATH for the
# test commands it runs. It records the outcome of every unittest test this
# interpreter runs and, at exit, writes them as a JUnit XML report into
# $DANDORI_TEST_REPORT_DIR, so a plain `python -m unittest` (no -v) still names
# its tests. It changes nothing the tests see, then hands over to the
# sitecustomize the project or its virtual environment has, if any.
import os
import sys


def _dandori_install():
    out_dir = os.environ.get("DANDORI_TEST_REPORT_DIR")
    if not out_dir:
        return
    import atexit
    import importlib.abc
    import importlib.util

    results = {}
    order = []

    def note(test, passed):
        try:
            tid = test.id()
        except Exception:
            tid = str(test)
        if tid not in results:
            order.append(tid)
            results[tid] = passed
        else:
            results[tid] = results[tid] and passed

    def wrap(cls, name, outcome):
        original = getattr(cls, name, None)
        if original is None or getattr(original, "_dandori", False):
            return

        def hooked(self, test, *args, **kwargs):
            try:
                verdict = outcome(test, *args)
                if verdict is not None:
                    note(test, verdict)
            except Exception:
                pass
            return original(self, test, *args, **kwargs)

        hooked._dandori = True
        setattr(cls, name, hooked)

    def patch(module):
        cls = getattr(module, "TestResult", None)
        if cls is None:
            return
        wrap(cls, "addSuccess", lambda t: True)
        wrap(cls, "addFailure", lambda t, err: False)
        wrap(cls, "addError", lambda t, err: False)
        wrap(cls, "addExpectedFailure", lambda t, err: True)
        wrap(cls, "addUnexpectedSuccess", lambda t: False)
        wrap(cls, "addSkip", lambda t, reason: None)
        # A failing subtest fails its test; a passing one says nothing more.
        wrap(cls, "addSubTest", lambda t, sub, err: None if err is None else False)

    def write():
        if not order:
            return
        from xml.sax.saxutils import quoteattr

        lines = ['<?xml version="1.0" encoding="utf-8"?>', '<testsuite name="unittest">']
        for tid in order:
            cls, _, name = tid.rpartition(".")
            body = "" if results[tid] else "<failure/>"
            lines.append(
                "<testcase classname=%s name=%s>%s</testcase>"
                % (quoteattr(cls), quoteattr(name or tid), body)
            )
        lines.append("</testsuite>")
        path = os.path.join(out_dir, "unittest-%d.xml" % os.getpid())
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        except OSError:
            pass

    atexit.register(write)

    module = sys.modules.get("unittest.result")
    if module is not None:
        patch(module)
        return

    # Patch unittest.result when it is first imported: most Python processes a
    # test command starts never import unittest, and they should not pay for it.
    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != "unittest.result":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)
            if spec is None or spec.loader is None:
                return spec
            loader = spec.loader
            exec_module = loader.exec_module

            class Loader(importlib.abc.Loader):
                def create_module(self, spec):
                    return loader.create_module(spec)

                def exec_module(self, module):
                    exec_module(module)
                    patch(module)

            spec.loader = Loader()
            return spec

    sys.meta_path.insert(0, Finder())


def _dandori_chain():
    here = os.path.dirname(os.path.abspath(__file__))
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _dandori_install()
except Exception:
    pass
_dandori_chain()
