from dryboot.cli import main

main()
