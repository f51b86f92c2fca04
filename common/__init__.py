"""Shared Python for the lab course. One module per concern, none of them knows a lab:

    errors   CourseError: a problem the user can fix, printed as one line and a hint
    device   is there a CUDA GPU, what it is (name, sm_XX, SMs, clocks, L2), its peak rates
    build    nvcc for one or more architectures, `-Xptxas -v` parsed per kernel
    kernels  the row type of a lab's kernel table; loading cubins and launching through PyCUDA
    check    float64 references, tolerances that grow with K, poisoned outputs, verdicts
    timing   CUDA-event timing with L2 flushed between repetitions
    cublas   cuBLAS SGEMM and FP16 GemmEx through ctypes, on PyCUDA's primary context
    sass     cuobjdump -sass parsed into exact opcode counts per kernel
    ncu      Nsight Compute: find it, its command line (clocks never locked), its errors, its CSV
    ncu_metrics  which ncu metrics exist on which chip; loads per FFMA, excess wavefronts, top stalls
    sanitizer    compute-sanitizer: its command line, its findings counted per kernel
    report   aligned tables, JSON records (GPU, commit, date), progress lines
    plots    the ladder chart
    hierarchy    a tiling's registers (estimate vs ptxas), occupancy per arch, shared/global traffic
    fragments    which lane holds which element of mma.sync / ldmatrix tiles; the GPU probe's checks
    banks        shared-memory wavefronts and bank conflicts of one warp instruction
    roofline     compute and bandwidth roofs, each kernel's point, the plot
    records      recorded benchmark JSON read back: tables, charts, comparisons, predictions
    sass_loops   a kernel's main loop found in SASS, condensed, listings side by side
    explorers    the text and figures of the hierarchy, fragment and bank explorers
    notebooks    execute notebooks top to bottom (nbclient), strip their outputs
"""
