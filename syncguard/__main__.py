from syncguard.cli import main

raise SystemExit(main())
