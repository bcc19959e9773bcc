# SPDX-License-Identifier: GPL-3.0-or-later
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
from ._tomolab import __version__  # noqa: F401  (the meson project version)
from ._tomolab import (  # noqa: F401
    Array, Context, CtData, CtGeometry, Error, FileError, FormatError, InvalidArgument,
    Listmode, NoDeviceError, Operator, ParseError, Scanner, Solver, UnsupportedError,
    algorithms, ct_operator, default_context, devices, expr, fdk, kernel_names, kernel_source,
    fbp, load_image, operators,
    pet_operator, phantom, phantom_names, priors, reduce, save_image, set_interruptible)
from ._tomolab import projectors  # noqa: F401  (the PET projectors, from the registry)
from ._tomolab import find_centre, minus_log, normalize, remove_stripes  # noqa: F401  (CT)
from ._tomolab import Cancelled, set_progress  # noqa: F401  (progress of long calls)

__all__ = [n for n in dir(_tomolab) if not n.startswith('_')] + ['Grid', 'Image', 'Dataset',
                                                                  'open']


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


@dataclass
class Dataset:
    """A file opened by the library's dataset layer, as the CLI and the window open it
    (docs/python.md "Opening files"): its kind ('image', 'pet-listmode', 'pet-bins', 'ct'),
    format, the data (an Image, a Listmode -- for 'pet-bins' the sinogram's scanner with no
    events, its crystal pairs in bin_pairs and counts in bin_counts --, or CtData) and the
    defaults every door uses: grid, subsets, and for parallel-beam CT the centre of rotation
    (column), searched like `tomolab-cli ct-recon --centre auto` when the format stores none."""
    kind: str
    path: str
    format: str
    data: object
    grid: Grid
    subsets: int
    start_s: float
    duration_s: float
    allows: list
    tof_bins: int
    centre: object
    centre_found: bool
    description: str
    bin_pairs: object = None
    bin_counts: object = None
    sinogram: object = None  # arc-corrected STIR data: the Sinogram (also `data`)

    def __str__(self):
        return self.description


def open(path, context=None, find_centre=True, progress=None):  # noqa: A001  (not the builtin)
    """Opens any file Tomolab reads (detected by content through the format table) as a
    Dataset. find_centre: search the CT centre of rotation on the device (`context`, default
    the module's) for formats that store none (Data Exchange, TIFF). progress:
    callable(fraction, message) for the load and the search (tomolab.set_progress)."""
    d = _tomolab._open(path, context, find_centre, progress)
    if d.get('sinogram') is not None:
        # arc-corrected projection data: their bins are lines, not crystal pairs; the data are
        # the Sinogram, reconstructed by Run.pet_operator as the CLI and the window do
        from .sinogram import Sinogram
        d['sinogram'] = d['data'] = Sinogram._from_dict(d['sinogram'])
    return Dataset(**d)


_tomolab._set_classes(Grid, Image)


class Run:
    """A reconstruction run described once (compute/run/tl-run-spec.h): the same keys, parser,
    checks and text form as ``tomolab-cli recon --run FILE`` (docs/formats.md, "Run files").
    Every key is an attribute, '-' spelled '_' (``run.tof_nsigma``): counts are int, numbers
    float (None: auto / none), flags bool, kernels a list of 'NAME=FILE', paths str (None:
    none), names and choices str. A value is checked when set (InvalidArgument naming the key
    and the value); ``validate()`` checks the combination. ``solver(op)`` and
    ``pet_operator(listmode)`` make the run's Solver and PET operator."""

    _KEYS = {k[0]: k for k in _tomolab._run_keys()}

    def __init__(self, **fields):
        object.__setattr__(self, '_v', _tomolab._run_canonical({}))
        for name, value in fields.items():
            setattr(self, name, value)

    @classmethod
    def load(cls, path):
        """A run file (key = value lines) or an image's JSON sidecar (its TomolabRun part)."""
        r = cls()
        object.__setattr__(r, '_v', _tomolab._run_load(str(path)))
        return r

    @classmethod
    def parse(cls, text, source='run'):
        r = cls()
        object.__setattr__(r, '_v', _tomolab._run_parse(text, source))
        return r

    def save(self, path):
        """Every key, one per line (written atomically)."""
        _tomolab._run_save(self._v, str(path))

    @property
    def text(self):
        return _tomolab._run_text(self._v)

    @classmethod
    def keys(cls):
        """[(key, type, values, default, unit, meaning)] of every key."""
        return list(cls._KEYS.values())

    def validate(self):
        """Raises InvalidArgument for a bad combination; returns the resolved defaults
        (algorithm, projector, iterations, subsets)."""
        return _tomolab._run_validate(self._v)

    def __getattr__(self, name):
        key = name.replace('_', '-')
        info = Run._KEYS.get(key)
        if info is None:
            raise AttributeError(f"Run has no key '{key}' (Run.keys())")
        v, kind = self._v[key], info[1]
        if kind == 'count':
            return int(v)
        if kind == 'number':
            return None if v in ('auto', 'none') else float(v)
        if kind == 'bool':
            return v == 'true'
        if kind == 'list':
            return [] if v == 'none' else [p.strip() for p in v.split(';')]
        if kind == 'path':
            return None if v == 'none' else v
        return v

    def __setattr__(self, name, value):
        key = name.replace('_', '-')
        info = Run._KEYS.get(key)
        if info is None:
            raise AttributeError(f"Run has no key '{key}' (Run.keys())")
        if value is None:
            text = 'auto' if info[1] in ('count', 'number') else ''
        elif isinstance(value, bool):
            text = 'true' if value else 'false'
        elif isinstance(value, float):
            text = repr(value)
        elif isinstance(value, (list, tuple)):
            text = '; '.join(str(v) for v in value) if value else 'none'
        else:
            text = str(value)
        v = dict(self._v)
        v[key] = text
        object.__setattr__(self, '_v', _tomolab._run_canonical(v))

    def __eq__(self, other):
        return isinstance(other, Run) and self._v == other._v

    def __repr__(self):
        return f"tomolab.Run(algorithm={self._v['algorithm']!r}, data={self._v['data']!r})"

    def solver(self, op, data=None, additive=None, **kw):
        """The run's Solver on `op` (algorithm, iterations, relaxation, objective, prior and
        its parameters, the filter between iterations); keywords pass on to Solver."""
        r = self.validate()
        if r['algorithm'] in ('fdk', 'fbp'):
            raise InvalidArgument(f"algorithm = {r['algorithm']}: a direct method, no Solver "
                                  f"(tomolab.{r['algorithm']})")
        args = dict(data=data, additive=additive, iterations=r['iterations'],
                    relaxation=self.relaxation, objective=self.objective,
                    nonnegative=self.nonnegative)
        if self.prior != 'none':
            # epsilon = auto: NaN asks the solver for PETRIC's (docs/recon.md)
            args.update(prior=self.prior, beta=self.beta, gamma=self.gamma,
                        epsilon=float('nan') if self.epsilon is None else self.epsilon)
        if self.filter_every:
            args.update(filter=self._v['filter'], filter_every=self.filter_every)
        if self.sensitivity is not None and 'sensitivity' not in kw:
            # the run key `sensitivity` (STIR's sensitivity filename): on the operator's grid
            s = load_image(self.sensitivity)
            if s.grid != op.grid:
                raise InvalidArgument(f'sensitivity = {self.sensitivity}: the image\'s grid is '
                                      f'{s.grid}; expected the run\'s image grid {op.grid}')
            args['sensitivity'] = s
        args.update(kw)
        return Solver(op, r['algorithm'], **args)

    def pet_operator(self, listmode, grid=None, attenuation=None, ctx=None):
        """The run's PET operator (projector, subsets, TOF, binned, cache, tube FWHM) on
        `grid` (default: the run's grid key, else the scanner's). `listmode` may be an
        arc-corrected Sinogram (a Dataset's data): its bins as lines with the run's
        rays-tangential x rays-axial rays, as the CLI and the window reconstruct them."""
        r = self.validate()
        if grid is None and self._v['grid'] != 'auto':
            dims, vox = self._v['grid'].split('@')
            v = [float(x) for x in vox.split(',')]
            grid = Grid.centred(tuple(int(d) for d in dims.split('x')), tuple(v * 3 if len(v) == 1 else v))
        if getattr(listmode, 'arc_corrected', False):
            if self.tof or self.binned:
                raise InvalidArgument('arc-corrected data: no TOF or binned = true (their bins '
                                      'are lines)')
            return _tomolab._arc_operator(listmode, grid, projector=r['projector'],
                                          subsets=r['subsets'],
                                          rays_tangential=self.rays_tangential,
                                          rays_axial=self.rays_axial, attenuation=attenuation,
                                          ctx=ctx)
        if self.rays_tangential > 1 or self.rays_axial > 1:
            raise InvalidArgument(f'rays-tangential = {self.rays_tangential}, rays-axial = '
                                  f'{self.rays_axial}: for arc-corrected sinograms (list mode '
                                  'and crystal-pair bins take one line per pair)')
        return pet_operator(listmode, grid, projector=r['projector'], subsets=r['subsets'],
                            tof=self.tof, tof_n_sigma=self.tof_nsigma, attenuation=attenuation,
                            binned=self.binned, use_cache=self.cache,
                            tor_fwhm_mm=self.tor_fwhm, ctx=ctx)


__all__.append('Run')

# Operator algebra (A @ x, A.T, A + 2 * B, aslinearoperator) and operators from arrays
# (tomolab/linop.py, python/src/tlpy-lines.c; docs/python.md "Operator algebra").
from ._tomolab import line_operator  # noqa: E402,F401
from .linop import LinearOperator, csr_operator, ct_geometry, ct_projector  # noqa: E402,F401
from .linop import EVENT_DTYPE, BIN_DTYPE, lor_end_points  # noqa: E402,F401

__all__ += ['LinearOperator', 'csr_operator', 'ct_geometry', 'ct_projector', 'EVENT_DTYPE',
            'BIN_DTYPE', 'lor_end_points']


def race(data, algos, reference=None, reference_algo=None, grid=None, object=None,  # noqa: A002
         background=None, vois=None, updates=50, until_target=False, objective=False,
         reference_updates=1000, tolerance=1e-7, context=None, kappa=None, seed=1):
    """Races 1 to 8 entrants ('ALGORITHM[:KEY=VALUE,...]', e.g. 'osem:subsets=10') on the PET
    data file `data`, one update each in turn on the device, as `tomolab-cli race` does
    (docs/recon.md, "Races"). reference: an Image, an array on `grid` or a file; or
    reference_algo: an entrant run first until its objective changes by at most `tolerance`
    per pass (at most reference_updates updates). object / background / vois ({name: mask}):
    masks (non-zero voxels). Returns {'entrants': {label: {'update', 'seconds', 'epoch',
    'objective', 'rmse', 'background_rmse', 'met' (numpy arrays), 'voi': {name: array},
    'time_to_target', 'epoch_to_target', 'image' (the last, an Image)}}, 'csv', 'norm', 'reference' (an Image),
    'reference_objective', 'reference_updates'}; PETRIC's metrics and thresholds. kappa: an
    image file of every prior's per-voxel weights, seed: the svrg / saga subset order (the run
    keys kappa and seed; an entrant's seed= wins). 'epoch' counts data passes (a projection of
    all data forward and back is 1)."""
    return _tomolab.race(str(data), list(algos), reference=reference,
                         reference_algo=reference_algo, grid=grid, object=object,
                         background=background, vois=vois, updates=updates,
                         until_target=until_target, objective=objective,
                         reference_updates=reference_updates, tolerance=tolerance,
                         context=context, kappa=None if kappa is None else str(kappa),
                         seed=seed)


# PET sinograms with their geometry (tomolab/sinogram.py, python/src/tlpy-sinogram.c;
# docs/python.md "PET sinograms").
from .sinogram import Sinogram  # noqa: E402,F401

__all__ += ['Sinogram']
