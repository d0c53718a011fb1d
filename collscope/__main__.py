from collscope.cli import main

raise SystemExit(main())
