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
    sinogram: object = None  # STIR data: the Sinogram (also `data` when arc-corrected)

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
        # the Sinogram, reconstructed by Run.pet_operator as the CLI and the window do. A
        # crystal-pair sinogram stays `data` as its scanner and bins, the Sinogram beside them
        # for a run with several rays per pair (Run.pet_operator(ds.sinogram))
        from .sinogram import Sinogram
        d['sinogram'] = Sinogram._from_dict(d['sinogram'])
        if d['sinogram'].arc_corrected:
            d['data'] = d['sinogram']
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
        its parameters, the filter between iterations); keywords pass on to Solver. A run with
        randoms or scatter needs their term as `additive` (refused without)."""
        r = self.validate()
        if r['algorithm'] in ('fdk', 'fbp'):
            raise InvalidArgument(f"algorithm = {r['algorithm']}: a direct method, no Solver "
                                  f"(tomolab.{r['algorithm']})")
        # the run's additive term (randoms, scatter and its rounds) is built by the CLI and the
        # window; here it is the caller's: never a run whose terms are silently left out
        terms = [f'{k} = {getattr(self, k)}' for k in ('randoms', 'scatter')
                 if getattr(self, k) != 'none']
        if terms and additive is None:
            raise InvalidArgument(f"{', '.join(terms)}: Run.solver takes the additive term "
                                  'as additive= (expected randoms + scatter per datum); '
                                  'tomolab-cli recon --run and the window estimate it')
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
        """The run's PET operator (projector, subsets, TOF, binned, cache, tube FWHM, the
        attenuation key's mu-map unless `attenuation` is given) on `grid` (default: the run's
        grid key, else the scanner's); a run with a normalisation is refused (no door here). `listmode` may be a
        Sinogram (Dataset.sinogram): arc-corrected, or of crystal pairs when the run asks for
        more than one ray per pair: its bins as lines with the run's rays-tangential x
        rays-axial rays, as the CLI and the window reconstruct them."""
        r = self.validate()
        if self.norm is not None:
            raise InvalidArgument(f'norm = {self.norm}: Run.pet_operator builds no '
                                  'normalisation; tomolab-cli recon --run and the window apply '
                                  'it')
        if attenuation is None and self.attenuation is not None:
            attenuation = load_image(self.attenuation)  # the run's mu-map, as every door reads it
        if grid is None and self._v['grid'] != 'auto':
            dims, vox = self._v['grid'].split('@')
            v = [float(x) for x in vox.split(',')]
            grid = Grid.centred(tuple(int(d) for d in dims.split('x')), tuple(v * 3 if len(v) == 1 else v))
        rays = self.rays_tangential > 1 or self.rays_axial > 1
        sino = hasattr(listmode, 'arc_corrected')  # a Sinogram (Dataset.sinogram)
        if sino and not listmode.arc_corrected and not rays:
            raise InvalidArgument('a crystal-pair Sinogram with one ray per pair: its bins are '
                                  'crystal pairs (pet_operator on the Dataset\'s data, or set '
                                  'rays_tangential / rays_axial for its bins as lines)')
        if sino:
            # arc-corrected bins, or crystal pairs with rays: lines, as the CLI and the window
            # (tl_dataset_lines, tl_recon_new_lines)
            kind = 'arc-corrected data' if listmode.arc_corrected else 'rays per crystal pair'
            if self.tof or self.binned:
                raise InvalidArgument(f'{kind}: no TOF or binned = true (their bins are lines)')
            return _tomolab._arc_operator(listmode, grid, projector=r['projector'],
                                          subsets=r['subsets'],
                                          rays_tangential=self.rays_tangential,
                                          rays_axial=self.rays_axial, attenuation=attenuation,
                                          ctx=ctx)
        if rays:
            raise InvalidArgument(f'rays-tangential = {self.rays_tangential}, rays-axial = '
                                  f'{self.rays_axial}: not with PET list mode (one line per '
                                  'crystal pair; several rays are for sinograms: arc-corrected, '
                                  'or crystal pairs of span 1 without view mashing, '
                                  'Dataset.sinogram)')
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


def race(data=None, algos=None, reference=None, reference_algo=None, grid=None,
         object=None, background=None, vois=None, updates=None, until_target=None,  # noqa: A002
         objective=None, reference_updates=None, tolerance=None, context=None, kappa=None,
         seed=None, nema=None, csv=None, race_file=None, progress=None, randoms=None):
    """Races 1 to 8 entrants ('ALGORITHM[:KEY=VALUE,...]', e.g. 'osem:subsets=10') on the PET
    data file `data`, one update each in turn on the device: the race description of
    `tomolab-cli race` and the window (compute/run/tl-run-race-spec.h; docs/formats.md, "Race
    files"), run by the same code, so the same settings give the same metrics per update.

    Each keyword is the race key of its name ('_' for '-'); None leaves the key as the race file
    has it, else at the run layer's default (updates 50, reference_updates 1000, tolerance
    1e-7, seed 1). race_file: a race file read first, the keywords over it (as the CLI's
    options over --race). reference: an Image, an array on `grid` or a file; with
    reference_algo (an entrant run first until its objective changes by at most `tolerance`
    per pass, at most reference_updates updates) a file name is where the reference is
    written. object / background / kappa (every prior's per-voxel weights), vois ({name:
    mask}): Images, arrays or files (masks: non-zero voxels). grid: a Grid centred on the
    scanner (Grid.centred) or the key's text 'NXxNYxNZ@V'; default the reference's, else the
    data's. nema: the NEMA IEC phantom's spheres and background. csv: a file for the table.
    randoms: 'none' or 'delayeds' (every entrant's additive term from the data's delayeds).
    context wins over the race file's device. progress: callable(fraction, message) for the
    set-up and after each round; False ends the race there (the records so far are returned).

    Returns {'entrants': {label: {'update', 'seconds', 'epoch', 'objective', 'rmse',
    'background_rmse', 'met' (numpy arrays), 'voi': {name: array}, 'time_to_target',
    'epoch_to_target', 'image' (the last, an Image)}}, 'csv', 'norm', 'reference' (an Image),
    'reference_objective', 'reference_updates', 'reference_seconds', 'rounds'}; PETRIC's
    metrics and thresholds. 'epoch' counts data passes (a projection of all data forward and
    back is 1)."""
    import os
    import tempfile
    if isinstance(reference, (Image, np.ndarray)) and reference_algo is not None:
        raise InvalidArgument('race: reference= an image and reference_algo= both: the made '
                              'reference is written to reference= (give a file name)')
    keys = []

    def key(name, value):
        if value is None:
            return
        if isinstance(value, bool):
            text = 'true' if value else 'false'
        elif isinstance(value, float):
            text = repr(value)
        else:
            text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
        keys.append((name, text))

    def entries(name, values):  # the list keys: ';' between entries
        if values is None or isinstance(values, str):
            return key(name, values)
        values = [str(v) for v in values]
        if any(';' in v for v in values):
            raise InvalidArgument(f"race key '{name}': an entry holds ';' (the separator)")
        keys.append((name, '; '.join(values) if values else 'none'))

    with tempfile.TemporaryDirectory(prefix='tomolab-race-') as tmp:
        def on_grid():  # the grid arrays are on: grid=, else the reference's
            if isinstance(grid, Grid):
                return grid
            if isinstance(reference, Image):
                return reference.grid
            if isinstance(reference, (str, os.PathLike)) and reference_algo is None:
                return load_image(os.fspath(reference)).grid
            raise InvalidArgument('race: masks and images as arrays need grid= (a Grid) or a '
                                  'reference image')

        def image(name, value):  # a file as it is; an Image or array written to a file
            if value is None or isinstance(value, (str, os.PathLike)):
                return value
            if not isinstance(value, Image):
                value = Image(np.asarray(value, np.float32), on_grid())
            path = os.path.join(tmp, f'{name}-{len(os.listdir(tmp))}.nii')
            value.save(path)
            return path

        if isinstance(grid, Grid):
            c = Grid.centred(grid.dims, grid.voxel_mm)
            f32 = lambda g: np.float32(g.voxel_mm + g.origin_mm)  # noqa: E731
            if c.dims != grid.dims or np.any(f32(c) != f32(grid)):
                raise InvalidArgument(f'race: grid {grid}: expected a grid centred on the '
                                      f'scanner (Grid.centred; race key grid = NXxNYxNZ@V)')
            key('grid', '%dx%dx%d@%.9g,%.9g,%.9g' % (grid.dims + grid.voxel_mm))
        else:
            key('grid', grid)
        key('data', data)
        entries('algos', algos)
        key('reference', image('reference', reference))
        key('reference-algo', reference_algo)
        key('object', image('object', object))
        key('background', image('background', background))
        key('kappa', image('kappa', kappa))
        key('randoms', randoms)
        if isinstance(vois, dict):
            if any(';' in n or '=' in n for n in vois):
                raise InvalidArgument("race: vois: a name holds ';' or '='")
            vois = [f'{n}={image("voi", m)}' for n, m in vois.items()]
        entries('vois', vois)
        for name, value in (('updates', updates), ('until-target', until_target),
                            ('objective', objective), ('reference-updates', reference_updates),
                            ('tolerance', tolerance), ('seed', seed), ('nema', nema),
                            ('csv', csv)):
            key(name, value)
        return _tomolab._race(keys, race_file=None if race_file is None else os.fspath(race_file),
                              context=context, progress=progress)


__all__.append('race')


# PET sinograms with their geometry (tomolab/sinogram.py, python/src/tlpy-sinogram.c;
# docs/python.md "PET sinograms").
from .sinogram import Sinogram  # noqa: E402,F401

__all__ += ['Sinogram']
