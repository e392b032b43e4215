"""The part of expecttest's API that torch.testing._internal.common_utils uses.

expecttest is not packaged by Debian; PyTorch's TestCase derives from expecttest.TestCase
and reads expecttest.ACCEPT. Inline expectations are compared, never rewritten.
"""
import re
import textwrap
import unittest

ACCEPT = False

_CPP_STACK = re.compile(r"\nException raised from .*", re.DOTALL)


def _normalize(expect):
    return textwrap.dedent(expect).strip("\n")


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):
        self.assertIsInstance(actual, str)
        self.assertMultiLineEqualMaybeCppStack(_normalize(expect), actual.strip("\n"))

    def assertExpectedRaisesInline(self, exc_type, callable, expect, *args, **kwargs):
        try:
            callable(*args, **kwargs)
        except exc_type as e:
            self.assertExpectedInline(str(e), expect, skip=1)
            return
        self.fail(msg="Did not raise when expected to")

    def assertMultiLineEqualMaybeCppStack(self, expect, actual, *args, **kwargs):
        # A C++ error may end with a stack trace that the expectation leaves out.
        if len(actual) > len(expect) and "\nException raised from" in actual:
            actual = _CPP_STACK.sub("", actual, count=1)
        self.assertMultiLineEqual(expect, actual, *args, **kwargs)
