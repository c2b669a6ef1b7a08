"""Imports torchvision where its compiled ops do not load (a CUDA torchvision wheel beside a CPU torch, the only
one some indexes have): its fake-kernel registrations for those ops would fail the import, and transformers and
timm import torchvision. The models need none of those ops (nms, roi_align, deform_conv2d, ...)."""
import torch
import torch.library


def import_torchvision():
    real = getattr(torch.library, "register_fake", None)
    if real is None:  # torch before 2.4 (Debian's 1.13): torchvision registers no fake kernels this way
        try:
            import torchvision
        except ImportError:
            return None
        return torchvision

    def register_fake(op, *args, **kwargs):
        name = op if isinstance(op, str) else ""
        if name.startswith("torchvision::") and not _op_exists(name):
            return lambda fn: fn  # the op never loaded: nothing to register a fake kernel for
        return real(op, *args, **kwargs)

    torch.library.register_fake = register_fake
    try:
        import torchvision
    except ImportError:
        return None
    finally:
        torch.library.register_fake = real
    return torchvision


def _op_exists(qualname):
    namespace, name = qualname.split("::")
    try:
        getattr(getattr(torch.ops, namespace), name)
        return True
    except (AttributeError, RuntimeError):
        return False
