"""Tomolab for Python: the compute library's devices, images, PET and CT operators and
reconstructions on numpy arrays (docs/python.md).

Everything here comes from the C extension ``tomolab._tomolab``; this file only adds the two
plain value classes the extension returns (Grid and Image) and re-exports the rest.

Images are float32 numpy arrays of shape (nz, ny, nx): x is the fastest axis, as the library
stores them (index = x + nx * (y + ny * z)). Grids give dims, voxel sizes and origins in
(x, y, z) order.
"""
from dataclasses import dataclass

import numpy as np

from . import _tomolab
from ._tomolab import (  # noqa: F401
    Array, Context, CtData, CtGeometry, Error, FileError, FormatError, InvalidArgument,
    Listmode, NoDeviceError, Operator, ParseError, Scanner, Solver, UnsupportedError,
    algorithms, ct_operator, default_context, devices, expr, fdk, kernel_names, kernel_source,
    fbp, load_image, operators,
    pet_operator, phantom, phantom_names, priors, reduce, save_image, set_interruptible)

__all__ = [n for n in dir(_tomolab) if not n.startswith('_')] + ['Grid', 'Image']


@dataclass(frozen=True)
class Grid:
    """A regular image grid: dims (nx, ny, nz), voxel_mm and origin_mm (the centre of voxel
    (0, 0, 0) in scanner coordinates, mm), all in (x, y, z) order."""
    dims: tuple
    voxel_mm: tuple
    origin_mm: tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        object.__setattr__(self, 'dims', tuple(int(v) for v in self.dims))
        object.__setattr__(self, 'voxel_mm', tuple(float(v) for v in self.voxel_mm))
        object.__setattr__(self, 'origin_mm', tuple(float(v) for v in self.origin_mm))

    @staticmethod
    def centred(dims, voxel_mm):
        """dims voxels of voxel_mm centred on the scanner origin (tl_image_grid_centred)."""
        return _tomolab._grid_centred(tuple(dims), tuple(voxel_mm))

    @property
    def shape(self):
        """The numpy shape of an image on this grid: (nz, ny, nx)."""
        return self.dims[::-1]

    @property
    def n_voxels(self):
        return self.dims[0] * self.dims[1] * self.dims[2]


@dataclass
class Image:
    """A float32 volume (numpy, shape (nz, ny, nx)) on a Grid."""
    data: np.ndarray
    grid: Grid

    def __post_init__(self):
        self.data = np.ascontiguousarray(self.data, dtype=np.float32).reshape(self.grid.shape)

    def save(self, path):
        """Writes the image; the format from the file name (NIfTI, raw, ...)."""
        save_image(path, self)


_tomolab._set_classes(Grid, Image)
