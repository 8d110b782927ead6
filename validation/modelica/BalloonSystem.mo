model BalloonSystem
  "9-d.o.f. balloon system (Alazard, Sanfedino, Kassarian, Section 4 / Table 1) built from Modelica.Mechanics.MultiBody (MSL 4.x)"

  /* ------------------------------------------------------------------------
     Validation scenario of titop-fmu (see the scenario document next to the
     paper, Section 4 / Table 1).  Requires the Modelica Standard Library 4.x.

     Frames and conventions
     - World frame R_i = MSL world frame, y up: gravity g*n with n = {0,-1,0},
       g = 9.81 m/s2 (set explicitly: the MSL default is g_n = 9.80665).
     - Balloon B: Parts.Body whose frame_a is at the centre of mass B
       (r_CM = 0) and whose axes are the balloon frame R_b.  It is not
       connected to the world by any joint: it is the root of the kinematic
       tree and its absolute position, velocity, orientation and angular
       velocity become states.  useQuaternions = true (the MSL default, set
       explicitly) so the orientation states are quaternions: no Euler-angle
       singularity (gimbal lock) can occur during the simulation.
     - Flight chain: Parts.FixedTranslation from B to the tip C,
       r = {0,-2,0} m resolved in R_b (C is 2 m below B).
     - Slider S: Joints.Prismatic at C along n = t_axis = {1,0,-1}, resolved in
       R_b (MSL normalises n itself, e = n/|n|), so S = C + p*e and the slider
       frame is parallel to R_b.  The joint force Fm = -k*p - d_s*der(p) comes
       from a Translational.Components.SpringDamper connected between the
       joint's support flange (fixed) and its axis flange: the spring-damper
       pushes on the axis with -(c*s_rel + d*v_rel), s_rel = p.
       Slider mass: Parts.PointMass at S.
     - Pendulum 1: Joints.Revolute at S, axis {0,0,1}; its frame_b is R_p1 =
       slider frame turned by theta1 about z (right-hand rule).  Damping
       Cm1 = -d_p1*der(theta1) from a Rotational.Components.Damper between the
       support and axis flanges.  FixedTranslation r = {0,-1.2,0} m (in R_p1)
       to P1, PointMass m_P1 at P1.
     - Pendulum 2: Joints.Revolute at P1, axis {0,0,1}, relative angle theta2
       (R_p2 = R_p1 turned by theta2), Damper d_p2, FixedTranslation
       r = {0,-1.6,0} m (in R_p2) to P2, PointMass m_P2 at P2.
     - Buoyancy: Forces.WorldForce at B, resolved in the WORLD frame,
       F = -(m_B + m_S + m_P1 + m_P2)*g = {0, 156.96, 0} N, no torque.
     - Gravity acts on every mass through the inner world object.

     Initial state: B at the origin, R_b = R_i, v_B = omega = 0; p = 0,
     der(p) = 0; theta1 = 170 deg, theta2 = -170 deg, zero joint rates.

     Balloon inertia and the triangle inequality
     The inertia tensor of B at B in R_b is [5,0,0; 0,10,-7; 0,-7,10] kg.m2
     (data of the paper, kept unchanged).  Its principal moments are 3, 5 and
     17 kg.m2: positive definite, but 3 + 5 < 17 violates the triangle
     inequality, so no real mass distribution has this tensor.  MSL 4.x
     Parts.Body does not check this: its only constraints are min = 0 on
     I_11, I_22, I_33 (here 5, 10, 10) and it contains no assert on the
     tensor.  The tensor only enters the Euler equation
     t = I*z_a + cross(w_a, I*w_a), which is well posed for any positive
     definite I, so the data are used as given; no option is needed.

     Outputs (same names as the columns of the project's CSV files)
     - x, y, z: position of B in R_i (balloon.r_0, the origin of frame_a).
     - phi, theta, psi: 3-2-1 Euler angles of the balloon,
       P_bi = Rz(psi)*Ry(theta)*Rx(phi), where P_bi has the balloon axes
       expressed in R_i as its columns ([v]_Ri = P_bi*[v]_Rb).
       MSL stores the orientation as R.T, the matrix that maps WORLD
       coordinates to frame coordinates (Frames.resolve2(R, v) = R.T*v), so
       R.T = transpose(P_bi), i.e. P_bi = transpose(balloon.frame_a.R.T).
       With P = P_bi:  theta = atan2(-P[3,1], sqrt(P[1,1]^2 + P[2,1]^2))
       (the same as asin(-P[3,1]), in [-pi/2, pi/2]),
       phi = atan2(P[3,2], P[3,3]), psi = atan2(P[2,1], P[1,1]), both in
       (-pi, pi]: angles are wrapped, not unwrapped.
       Equivalent MSL call: Frames.axesRotationsAngles(balloon.frame_a.R,
       {3,2,1}) returns {psi, theta, phi} (angles in rotation order: world
       rotated about z by psi, then about the new y by theta, then about the
       new x by phi).  Of the two solutions (psi, theta, phi) and
       (psi + pi, pi - theta, phi + pi) it returns the one whose first angle
       is closest to guessAngle1 = 0, so it agrees with the formulas above
       only while |psi| < pi/2; the explicit formulas follow the usual
       convention theta in [-pi/2, pi/2] used by the other engines.
     - p: prismatic joint coordinate (m); theta1, theta2: revolute joint
       angles (rad), continuous (not wrapped).
     ------------------------------------------------------------------------ */

  // ---- Scenario data ------------------------------------------------------
  parameter Real g(unit="m/s2") = 9.81 "Gravity acceleration (along -y of the world frame)";

  parameter Real m_B(unit="kg") = 10 "Balloon mass";
  parameter Real I_B11(unit="kg.m2") = 5 "Balloon inertia at B in R_b, element (1,1)";
  parameter Real I_B22(unit="kg.m2") = 10 "Balloon inertia at B in R_b, element (2,2)";
  parameter Real I_B33(unit="kg.m2") = 10 "Balloon inertia at B in R_b, element (3,3)";
  parameter Real I_B21(unit="kg.m2") = 0 "Balloon inertia at B in R_b, element (2,1)";
  parameter Real I_B31(unit="kg.m2") = 0 "Balloon inertia at B in R_b, element (3,1)";
  parameter Real I_B32(unit="kg.m2") = -7 "Balloon inertia at B in R_b, element (3,2)";
  parameter Real r_BC[3](each unit="m") = {0, -2, 0} "Vector from B to the flight-chain tip C, in R_b (= -CB)";

  parameter Real m_S(unit="kg") = 1 "Slider point mass";
  parameter Real t_axis[3](each unit="1") = {1, 0, -1} "Prismatic joint axis t in R_b (normalised by the joint)";
  parameter Real k(unit="N/m") = 50 "Prismatic joint stiffness";
  parameter Real d_s(unit="N.s/m") = 5 "Prismatic joint damping";
  parameter Real p_0(unit="m") = 0 "Initial slider position p";
  parameter Real pd_0(unit="m/s") = 0 "Initial slider velocity der(p)";

  parameter Real m_P1(unit="kg") = 2 "Pendulum 1 point mass";
  parameter Real n_r1[3](each unit="1") = {0, 0, 1} "Revolute 1 axis r1 (in the slider frame = R_p1)";
  parameter Real r_SP1[3](each unit="m") = {0, -1.2, 0} "Vector S -> P1 in R_p1";
  parameter Real d_p1(unit="N.m.s/rad") = 0.5 "Revolute 1 damping";
  parameter Real theta1_0_deg(unit="deg") = 170 "Initial angle theta1 (degrees)";
  parameter Real thetad1_0(unit="rad/s") = 0 "Initial rate der(theta1)";

  parameter Real m_P2(unit="kg") = 3 "Pendulum 2 point mass";
  parameter Real n_r2[3](each unit="1") = {0, 0, 1} "Revolute 2 axis r2 (in R_p1 = R_p2)";
  parameter Real r_P1P2[3](each unit="m") = {0, -1.6, 0} "Vector P1 -> P2 in R_p2";
  parameter Real d_p2(unit="N.m.s/rad") = 0.5 "Revolute 2 damping";
  parameter Real theta2_0_deg(unit="deg") = -170 "Initial relative angle theta2 (degrees)";
  parameter Real thetad2_0(unit="rad/s") = 0 "Initial rate der(theta2)";

  // ---- Derived quantities ---------------------------------------------------
  parameter Real theta1_0(unit="rad", displayUnit="deg") = Modelica.Units.Conversions.from_deg(theta1_0_deg) "Initial angle theta1 (rad)";
  parameter Real theta2_0(unit="rad", displayUnit="deg") = Modelica.Units.Conversions.from_deg(theta2_0_deg) "Initial angle theta2 (rad)";
  parameter Real m_G(unit="kg") = m_B + m_S + m_P1 + m_P2 "Total mass of the system";
  parameter Real F_buoy[3](each unit="N") = {0, m_G*g, 0} "Buoyancy force at B, resolved in the world frame (= -m_G*g_vector)";

  // ---- Components -------------------------------------------------------------
  inner Modelica.Mechanics.MultiBody.World world(
    g=g,
    n={0, -1, 0}) "World frame R_i (y up) and uniform gravity";

  Modelica.Mechanics.MultiBody.Parts.Body balloon(
    m=m_B,
    r_CM={0, 0, 0},
    I_11=I_B11,
    I_22=I_B22,
    I_33=I_B33,
    I_21=I_B21,
    I_31=I_B31,
    I_32=I_B32,
    useQuaternions=true,
    r_0(start={0, 0, 0}, each fixed=true),
    v_0(start={0, 0, 0}, each fixed=true),
    angles_fixed=true,
    angles_start={0, 0, 0},
    w_0_fixed=true,
    w_0_start={0, 0, 0}) "Balloon B, free body, frame_a at its centre of mass";

  Modelica.Mechanics.MultiBody.Parts.FixedTranslation chain(
    r=r_BC) "Rigid flight chain from B to its tip C";

  Modelica.Mechanics.MultiBody.Joints.Prismatic prismatic(
    useAxisFlange=true,
    n=t_axis,
    s(fixed=true, start=p_0),
    v(fixed=true, start=pd_0)) "Prismatic joint at C along t; s = p";

  Modelica.Mechanics.Translational.Components.SpringDamper springDamper(
    c=k,
    d=d_s,
    s_rel0=0) "Fm = -k*p - d_s*der(p) inside the prismatic joint";

  Modelica.Mechanics.MultiBody.Parts.PointMass slider(
    m=m_S) "Slider point mass at S";

  Modelica.Mechanics.MultiBody.Joints.Revolute revolute1(
    useAxisFlange=true,
    n=n_r1,
    phi(fixed=true, start=theta1_0),
    w(fixed=true, start=thetad1_0)) "Revolute joint at S; phi = theta1";

  Modelica.Mechanics.Rotational.Components.Damper damper1(
    d=d_p1) "Cm1 = -d_p1*der(theta1)";

  Modelica.Mechanics.MultiBody.Parts.FixedTranslation rod1(
    r=r_SP1) "Pendulum 1 arm S -> P1 (massless)";

  Modelica.Mechanics.MultiBody.Parts.PointMass mass1(
    m=m_P1) "Pendulum 1 point mass at P1";

  Modelica.Mechanics.MultiBody.Joints.Revolute revolute2(
    useAxisFlange=true,
    n=n_r2,
    phi(fixed=true, start=theta2_0),
    w(fixed=true, start=thetad2_0)) "Revolute joint at P1; phi = theta2 (relative)";

  Modelica.Mechanics.Rotational.Components.Damper damper2(
    d=d_p2) "Cm2 = -d_p2*der(theta2)";

  Modelica.Mechanics.MultiBody.Parts.FixedTranslation rod2(
    r=r_P1P2) "Pendulum 2 arm P1 -> P2 (massless)";

  Modelica.Mechanics.MultiBody.Parts.PointMass mass2(
    m=m_P2) "Pendulum 2 point mass at P2";

  Modelica.Mechanics.MultiBody.Forces.WorldForce buoyancy(
    resolveInFrame=Modelica.Mechanics.MultiBody.Types.ResolveInFrameB.world,
    force=F_buoy) "Buoyancy at B, fixed in the world frame, no torque";

  // ---- Outputs (CSV columns) -------------------------------------------------------
  output Real x(unit="m") "Position of B in R_i, x";
  output Real y(unit="m") "Position of B in R_i, y";
  output Real z(unit="m") "Position of B in R_i, z";
  output Real phi(unit="rad", displayUnit="deg") "3-2-1 Euler angle about x (roll)";
  output Real theta(unit="rad", displayUnit="deg") "3-2-1 Euler angle about y (pitch)";
  output Real psi(unit="rad", displayUnit="deg") "3-2-1 Euler angle about z (yaw)";
  output Real p(unit="m") "Prismatic joint coordinate";
  output Real theta1(unit="rad", displayUnit="deg") "Revolute 1 angle";
  output Real theta2(unit="rad", displayUnit="deg") "Revolute 2 angle (relative to pendulum 1)";

protected
  Real P_bi[3, 3] "DCM with the balloon axes as columns, expressed in R_i";

equation
  // Kinematic tree: balloon -> chain -> prismatic -> revolute1 -> rod1 -> revolute2 -> rod2
  connect(balloon.frame_a, chain.frame_a);
  connect(chain.frame_b, prismatic.frame_a);
  connect(prismatic.frame_b, slider.frame_a);
  connect(prismatic.frame_b, revolute1.frame_a);
  connect(revolute1.frame_b, rod1.frame_a);
  connect(rod1.frame_b, mass1.frame_a);
  connect(rod1.frame_b, revolute2.frame_a);
  connect(revolute2.frame_b, rod2.frame_a);
  connect(rod2.frame_b, mass2.frame_a);

  // Joint force laws (1-D elements between the support and axis flanges)
  connect(springDamper.flange_a, prismatic.support);
  connect(springDamper.flange_b, prismatic.axis);
  connect(damper1.flange_a, revolute1.support);
  connect(damper1.flange_b, revolute1.axis);
  connect(damper2.flange_a, revolute2.support);
  connect(damper2.flange_b, revolute2.axis);

  // External force
  connect(buoyancy.frame_b, balloon.frame_a);

  // Outputs
  x = balloon.r_0[1];
  y = balloon.r_0[2];
  z = balloon.r_0[3];

  // MSL: R.T maps world coordinates to balloon coordinates, so P_bi = R.T'
  P_bi = transpose(balloon.frame_a.R.T);
  theta = atan2(-P_bi[3, 1], sqrt(P_bi[1, 1]^2 + P_bi[2, 1]^2));
  phi = atan2(P_bi[3, 2], P_bi[3, 3]);
  psi = atan2(P_bi[2, 1], P_bi[1, 1]);

  p = prismatic.s;
  theta1 = revolute1.phi;
  theta2 = revolute2.phi;

  annotation (
    experiment(StartTime=0, StopTime=20, Interval=0.01, Tolerance=1e-10),
    Documentation(info="<html>
<p>Balloon system of the titop-fmu validation scenario: a free balloon B
(m = 10 kg, inertia [5,0,0; 0,10,-7; 0,-7,10] kg.m2 at B), a rigid flight
chain to C = B + [0,-2,0] (balloon frame), a slider (1 kg) on a prismatic joint
along [1,0,-1] with spring k = 50 N/m and damper d_s = 5 N.s/m, and a double
point-mass pendulum (2 kg at 1.2 m, 3 kg at 1.6 m) on two revolute joints about
z with dampers 0.5 N.m.s/rad. Buoyancy [0, 156.96, 0] N acts at B in the world
frame. Initial angles 170 deg and -170 deg, everything else at rest.</p>
<p>Outputs x, y, z (position of B in the world frame), phi, theta, psi
(3-2-1 Euler angles, P_bi = Rz(psi) Ry(theta) Rx(phi)), p, theta1, theta2.
The balloon inertia violates the triangle inequality of principal moments
(3 + 5 &lt; 17); MSL Parts.Body does not check it and the data are used
unchanged. See the comment block at the top of the model for details.</p>
</html>"));
end BalloonSystem;
