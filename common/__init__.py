"""The course's runtime. One module per concern, none of them knows a lab; a lab is a folder with
its table (lab.py) that these read. `python -m common <target> --lab labs/<lab>` is the way in.

    lab        a lab folder loaded: its table's rows and options, build, launch, matmul, check
    precision  FP32, FP16, BF16, TF32 and 3xTF32 tensor cores: input type, error bound, peak, cuBLAS call
    tiling     a kernel's parameters read from its .cu file (the one place they are written)
    kernels    the row type of a lab's table; loading cubins and launching through PyCUDA
    targets    make build, bench, sass, tune (the autotuner), selfcheck
    measure    the GPU check, timing kernels against cuBLAS in one run (Measurer), the tuner's machinery
    profiling  make ncu-table, ncu-tensor, ncu, sanitize, and the program the profilers run
    grading    make workspace, grade, grade-selftest, grade-class (a package; a lab declares its parts as data)
    browser    headless Chromium (Debian's, through Playwright) and a JupyterLab of its own, for the browser tests
    testing    what the labs' tests share: GPU_OK, needs_gpu, lab_of, gpu_cases
    errors     CourseError: a problem the user can fix, printed as one line and a hint
    device     is there a CUDA GPU, what it is (name, sm_XX, SMs, clocks, L2), its peak rates
    build      nvcc for one or more architectures, `-Xptxas -v` parsed per kernel, header-aware stamps
    headers    header-only libraries found at build time: CUTLASS/CuTe from the nvidia-cutlass wheel
    check      float64 references, poisoned outputs, verdicts
    timing     CUDA-event timing, L2 flushed and the stream given a head start between repetitions
    cublas     cuBLAS SGEMM, FP16/BF16/TF32 GemmEx through ctypes, on PyCUDA's primary context
    tensor_maps  TMA tensor maps and launches PyCUDA cannot make (cuda-python's driver binding)
    workspaces device scratch buffers a launch hook keeps between calls (split-K, stream-K partials)
    sass       cuobjdump -sass parsed into exact opcode counts per kernel
    ncu        Nsight Compute: find it, its command line (clocks never locked), its errors, its CSV
    ncu_metrics  which ncu metrics exist on which chip; loads per FFMA, excess wavefronts, top stalls
    sanitizer  compute-sanitizer: its command line, its findings counted per kernel
    report     aligned tables, JSON records (GPU, commit, date), progress lines
    plots      the ladder chart
    hierarchy  a tiling's registers (estimate vs ptxas), occupancy per arch, shared/global traffic
    fragments  which lane holds which element of mma.sync / ldmatrix tiles; the GPU probe's checks
    banks      shared-memory wavefronts and bank conflicts of one warp instruction
    roofline   compute and bandwidth roofs, each kernel's point, the plot
    accuracy   make accuracy: error vs K against float64 for cuBLAS (SGEMM, TF32, 3 x TF32) and a lab's rows
    records    recorded benchmark JSON read back: tables, charts, comparisons, predictions
    readme_tables  the READMEs' tables, generated from the committed records (and checked against them)
    sass_loops a kernel's main loop found in SASS, condensed, listings side by side
    explorers  the text and figures of the hierarchy, fragment and bank explorers
    views      what a lab's notebooks show, as functions of the lab
    notebooks  execute notebooks top to bottom (nbclient), strip their outputs; the committed copy checked
    rungs      make diff: a rung of a ladder against the rung before it (unified or side by side)
    runs       the runs a results/ folder holds by kind and GPU; the older ones (scripts/prune-results.py)
    pytest_summary  make test's quiet report: a line per lab, failures in full (V=1: pytest's own)
"""
