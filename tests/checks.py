"""Assertions shared by the test modules: the checker's gates with this project's margin."""
import reference

FACTOR_TARGET = 5.0      # scaled factor residual we hold ourselves to (the gate is 20)
ORTH_TARGET = 25.0       # scaled orthogonality residual (the gate is 100)


def residuals(message: str) -> tuple[float, float]:
    """(scaled factor residual, scaled orthogonality residual) from a passing checker message."""
    fields = dict(part.split("=") for part in message.split("; "))
    return float(fields["scaled_factor_residual"]), float(fields["scaled_orthogonality_residual"])


def assert_passes(a, out) -> tuple[float, float]:
    """The checker's gates hold for `out = (H, tau)`; returns the scaled residuals."""
    ok, message = reference.check_implementation(a, out)
    assert ok, message
    return residuals(message)


def assert_factors(a, out) -> tuple[float, float]:
    """The gates hold with this project's margin; returns the scaled residuals."""
    factor, orth = assert_passes(a, out)
    assert factor <= FACTOR_TARGET and orth <= ORTH_TARGET, (factor, orth)
    return factor, orth
