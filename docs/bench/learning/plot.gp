# gnuplot plot.gp (in this folder): the loss curves of bench_learning and the averaging-cadence runs.
set terminal png size 900,560
set datafile separator ','
set grid
set xlabel 'tokens'
set ylabel 'held-out loss (nats/token)'
set yrange [1:4]
floor = 1.1369

set output 'learning.png'
set title 'tiny model, 400 steps: centralized vs 4-stage x 3-replica swarm (SPARTA 5% / 20 steps)'
plot 'centralized.csv' every ::1 using 1:2 with lines lw 2 title 'centralized (S=1 R=1 none)', \
     'swarm-none.csv' every ::1 using 1:2 with lines lw 2 title 'swarm S=4 R=3 none', \
     'swarm-subspace-8x.csv' every ::1 using 1:2 with lines lw 2 title 'swarm S=4 R=3 subspace 8x (k=16)', \
     'swarm-subspace-32x.csv' every ::1 using 1:2 with lines lw 2 title 'swarm S=4 R=3 subspace 32x (k=4)', \
     floor with lines dt 2 lc rgb 'gray' title 'entropy floor'

set output 'cadence.png'
set title 'tiny model, S=4 R=3 codec none: how often replicas average'
plot 'centralized.csv' every ::1 using 1:2 with lines lw 2 title 'centralized', \
     'cadence-noavg.csv' every ::1 using 1:2 with lines lw 2 title 'no averaging', \
     'swarm-none.csv' every ::1 using 1:2 with lines lw 2 title 'SPARTA 5% every 20 steps (design)', \
     'cadence-every1-p20.csv' every ::1 using 1:2 with lines lw 2 title 'SPARTA 5% every step', \
     'cadence-every1-p1.csv' every ::1 using 1:2 with lines lw 2 title 'all weights every step', \
     floor with lines dt 2 lc rgb 'gray' title 'entropy floor'
