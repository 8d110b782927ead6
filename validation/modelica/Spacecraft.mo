model Spacecraft
  "Modelica MultiBody twin of examples/spacecraft.toml: a free-flying bus, a boom and panel, a slider and a three-link chain (MSL 4.x)"

  /* ------------------------------------------------------------------------
     Twin of the system file examples/spacecraft.toml (TITOP blocks), built
     from Modelica.Mechanics.MultiBody (MSL 4.x) only.  Compare the two with

       python validation/compare_twin.py examples/spacecraft.toml

     (the system file names this model: modelica = "...").

     Topology (unit names of the system file; links child port -> parent port)
       bus    floating_base_c2   free body, the root of the tree: full inertia,
        |                        offset centre of mass, initial attitude and
        |                        twist, gravity, a torque in its own frame
        |- c1 -> boom   welded_c1     mounted at [phi, theta, psi] = [0.3, -0.2, 0.5] rad
        |         |- c1 -> panel revolute_c0   oblique hinge [0.3, 0.5, 0.8], damper d
        |- c2 -> slider prismatic_c1  oblique rail [1, 0.2, -0.3], spring k and damper d
                  |- c1 -> link1 revolute_c1 -> link2 revolute_c1 -> link3 revolute_c0
                           axes [0.1, 0.2, 1], [0.8, 0.1, 0.6], [0, 0.3, 1]

     Convention mapping, TITOP block parameter -> MSL component.  Those of
     TwoBranch.mo (see its header and validation/modelica/README.md) hold as
     they are: World(g, n = {0,-1,0}) for gravity [0, -g, 0]; a Parts.Body per
     block with frame_a at the port point P and the axes of the block frame,
     r_CM = com, I_11..I_32 = inertia at the centre of mass in the body frame
     (I_21 = inertia[2][1], I_31 = inertia[3][1], I_32 = inertia[3][2]);
     Parts.FixedTranslation(r = ci.r) for every child point; the mount as
     Parts.FixedRotation(PlanarRotationSequence, sequence = {3,2,1},
     angles = {psi, theta, phi}) IN DEGREES after the parent's child point;
     Joints.Revolute / Joints.Prismatic(n = axis) with q0, qd0 as
     phi/s and w/v (start, fixed = true); the spring/damper -k q - d qd as a
     1-D SpringDamper/Damper from the joint's support (flange_a) to its axis
     (flange_b).  Numbers without a unit in the system file are radians; the
     mount's radians go to FixedRotation through to_deg.  New here:

     - Offset centre of mass and full inertia of the floating base: nothing
       new, r_CM = com and all six I_ij (TITOP's D_P = tau_BP^T diag(m, I_B)
       tau_BP is MSL's Newton-Euler about the centre of mass written at
       frame_a).
     - Initial attitude `Theta0 = [phi, theta, psi]` (3-2-1, P_b/i =
       Rz(psi) Ry(theta) Rx(phi)) -> Body(angles_fixed = true,
       sequence_start = {3,2,1}, angles_start = {psi, theta, phi}) in
       RADIANS (Body's angles_start are SI.Angle, unlike FixedRotation's
       angles in degrees): MSL's axesRotations({3,2,1}, {psi, theta, phi})
       is the orientation object R with R.T = Tx(phi) Ty(theta) Tz(psi) =
       P_b/i^T.
     - Initial twist `twist0 = [v_P; omega]`, both in the body frame R_b, v_P
       the velocity of the port point P (not of the centre of mass):
         omega -> Body.w_a(start = omega, each fixed = true): w_a is the
                  angular velocity of frame_a resolved in frame_a, i.e. in
                  R_b (MSL's w_0_start would be resolved in the world frame);
         v_P   -> Body.v_0(start = P_b/i(Theta0) v_P, each fixed = true):
                  v_0 = der(r_0) is the velocity of frame_a = P resolved in
                  the world frame; P_bi0 below is Rz Ry Rx of Theta0 written
                  out.
       r0 = [IP]_Ri -> Body.r_0(start = r0, each fixed = true).
     - External wrench in the body frame (`ext_frame = 1`): "bus.ext.w" =
       [F; T_P] at P in R_b -> Forces.WorldForceAndTorque(resolveInFrame =
       ResolveInFrameB.frame_b, force = F, torque = T_P) on bus.frame_a (MSL
       applies force and torque at frame_b's origin = P, resolved in frame_b
       = R_b; for ext_frame = 0 it would be resolveInFrame = world).
     - A joint without spring or damper (link3: k = d = 0) ->
       Joints.Revolute(useAxisFlange = false): a free joint.
     - Outputs, named after the `record` entries of the system file:
         bus.p.m[10..12] = omega in R_b           -> bus.w_a
         bus.p.m[13..15] = [IP]_Rb                -> bus.frame_a.R.T*bus.frame_a.r_0
         bus.p.m[16..18] = Theta = [phi, theta, psi] of P_b/i =
                           transpose(bus.frame_a.R.T), with the formulas
                           of titop_fmu.spatial.euler_from_dcm (theta =
                           atan2(-P31, hypot(P11, P21)), phi = atan2(P32,
                           P33), psi = atan2(P21, P11)); its branch at exact
                           gimbal lock (hypot < 1e-12: phi = 0) is never
                           taken here (the bus comes within 0.48 deg of it
                           near t = 12.2 s, no closer), so it is left out.
         <joint>.joint.q[3] = q   -> Revolute.phi / Prismatic.s
         <joint>.joint.q[2] = qd  -> Revolute.w   / Prismatic.v
         inertial outputs, in R_i (a point X of a body whose frame_a is at P):
         <body>.<X>.position = [IX]_Ri  -> frame_a.r_0 + P_b/i*[PX]_Rb (a child
                           point: its FixedTranslation's frame_b.r_0)
         <body>.<X>.velocity = [v_X; omega]_Ri -> v_0 + P_b/i*cross(w_a, [PX]_Rb)
                           and P_b/i*w_a (v_0 = der(r_0), w_a resolved in frame_a)
         <body>.dcm[1..9]  = P_b/i row by row, P_b/i = transpose(frame_a.R.T)
         <body>.euler[1..3] = Theta of P_b/i, as bus.p.m[16..18]
     ------------------------------------------------------------------------ */

  import MB = Modelica.Mechanics.MultiBody;
  import Modelica.Units.Conversions.from_deg;
  import Modelica.Units.Conversions.to_deg;

  parameter Real g(unit="m/s2") = 9.81 "Gravity acceleration along -y (0: no gravity)";

  // bus initial state (floating_base: r0, Theta0, twist0)
  parameter Real r0[3](each unit="m") = {1.0, 2.0, -0.5} "r0 = [IP]_Ri at t = 0";
  parameter Real Theta0[3](each unit="rad") = {0.0, 1.3, -0.4} "Theta0 = [phi, theta, psi], 3-2-1";
  parameter Real v_P0[3](each unit="m/s") = {0.1, 0.05, -0.05} "twist0[1:3]: v_P in R_b";
  parameter Real w_P0[3](each unit="rad/s") = {0.005, 0.15, -0.003} "twist0[4:6]: omega in R_b";
  final parameter Real P_bi0[3, 3] =
    [cos(Theta0[3]), -sin(Theta0[3]), 0; sin(Theta0[3]), cos(Theta0[3]), 0; 0, 0, 1]
    *[cos(Theta0[2]), 0, sin(Theta0[2]); 0, 1, 0; -sin(Theta0[2]), 0, cos(Theta0[2])]
    *[1, 0, 0; 0, cos(Theta0[1]), -sin(Theta0[1]); 0, sin(Theta0[1]), cos(Theta0[1])]
    "P_b/i(Theta0) = Rz(psi) Ry(theta) Rx(phi)";

  // bus.ext.w = [F; T_P] at P in R_b (ext_frame = 1): a thruster pair
  parameter Real F_ext[3](each unit="N") = {0, 0, 0} "bus.ext.w[1:3], in R_b";
  parameter Real T_ext[3](each unit="N.m") = {0.05, 1.5, -0.04} "bus.ext.w[4:6], at P in R_b";

  inner MB.World world(g=g, n={0, -1, 0}, enableAnimation=false) "R_i, y up";

  // ---- bus: floating_base_c2 --------------------------------------------------
  MB.Parts.Body bus(
    m=40.0, r_CM={0.05, -0.02, 0.1},
    I_11=12.0, I_22=15.0, I_33=10.0, I_21=0.8, I_31=-0.5, I_32=0.3,
    useQuaternions=true, enforceStates=true,
    r_0(start=r0, each fixed=true),
    v_0(start=P_bi0*v_P0, each fixed=true),
    angles_fixed=true, sequence_start={3, 2, 1},
    angles_start={Theta0[3], Theta0[2], Theta0[1]},
    w_a(start=w_P0, each fixed=true)) "bus, frame_a at its port point P";
  MB.Forces.WorldForceAndTorque thrusters(
    resolveInFrame=MB.Types.ResolveInFrameB.frame_b,
    force=F_ext, torque=T_ext) "bus.ext.w, ext_frame = 1 (body frame)";
  MB.Parts.FixedTranslation bus_c1(r={0.6, 0.2, -0.1}) "bus c1.r";
  MB.Parts.FixedTranslation bus_c2(r={-0.4, -0.5, 0.3}) "bus c2.r";

  // ---- boom: welded_c1 on bus.c1, mount [0.3, -0.2, 0.5] rad ------------------
  MB.Parts.FixedRotation boom_mount(
    rotationType=MB.Types.RotationTypes.PlanarRotationSequence,
    sequence={3, 2, 1}, angles={to_deg(0.5), to_deg(-0.2), to_deg(0.3)})
    "mount [phi, theta, psi] = [0.3, -0.2, 0.5] rad";
  MB.Parts.Body boom(
    m=3.0, r_CM={0.5, 0.05, 0.0},
    I_11=0.4, I_22=0.1, I_33=0.45, I_21=0.02, I_31=0.0, I_32=-0.01) "boom body";
  MB.Parts.FixedTranslation boom_c1(r={1.0, 0.1, 0.05}) "boom c1.r";

  // ---- panel: revolute_c0 on boom.c1, oblique hinge, damped ---------------------
  MB.Joints.Revolute panel_joint(
    useAxisFlange=true, n={0.3, 0.5, 0.8},
    phi(fixed=true, start=from_deg(20)),
    w(fixed=true, start=0.5)) "panel hinge, q0 = 20 deg, qd0 = 0.5 rad/s";
  Modelica.Mechanics.Rotational.Components.Damper panel_damper(d=0.2) "panel d";
  MB.Parts.Body panel(
    m=2.0, r_CM={0.4, -0.1, 0.05},
    I_11=0.3, I_22=0.2, I_33=0.45, I_21=0.01, I_31=0.02, I_32=0.0) "panel body";

  // ---- slider: prismatic_c1 on bus.c2, oblique rail, spring and damper ----------
  MB.Joints.Prismatic slider_joint(
    useAxisFlange=true, n={1.0, 0.2, -0.3},
    s(fixed=true, start=0.05),
    v(fixed=true, start=0.1)) "slider rail, q0 = 0.05 m, qd0 = 0.1 m/s";
  Modelica.Mechanics.Translational.Components.SpringDamper slider_spring(
    c=30.0, d=2.0, s_rel0=0) "slider k, d";
  MB.Parts.Body slider(
    m=1.5, r_CM={0.0, -0.05, 0.0},
    I_11=0.02, I_22=0.03, I_33=0.02, I_21=0.0, I_31=0.001, I_32=0.0) "slider body";
  MB.Parts.FixedTranslation slider_c1(r={0.0, -0.1, 0.0}) "slider c1.r";

  // ---- link1: revolute_c1 on slider.c1 --------------------------------------------
  MB.Joints.Revolute link1_joint(
    useAxisFlange=true, n={0.1, 0.2, 1.0},
    phi(fixed=true, start=from_deg(40)),
    w(fixed=true, start=0.3)) "link1 axis, q0 = 40 deg, qd0 = 0.3 rad/s";
  Modelica.Mechanics.Rotational.Components.Damper link1_damper(d=0.05) "link1 d";
  MB.Parts.Body link1(
    m=1.0, r_CM={0.0, -0.3, 0.02},
    I_11=0.05, I_22=0.03, I_33=0.05, I_21=0.003, I_31=0.0, I_32=0.0) "link1 body";
  MB.Parts.FixedTranslation link1_c1(r={0.0, -0.6, 0.0}) "link1 c1.r";

  // ---- link2: revolute_c1 on link1.c1 ---------------------------------------------
  MB.Joints.Revolute link2_joint(
    useAxisFlange=true, n={0.8, 0.1, 0.6},
    phi(fixed=true, start=from_deg(-30)),
    w(fixed=true, start=0)) "link2 axis, q0 = -30 deg";
  Modelica.Mechanics.Rotational.Components.Damper link2_damper(d=0.05) "link2 d";
  MB.Parts.Body link2(
    m=0.8, r_CM={0.02, -0.25, 0.0},
    I_11=0.04, I_22=0.02, I_33=0.04, I_21=0.0, I_31=0.004, I_32=0.0) "link2 body";
  MB.Parts.FixedTranslation link2_c1(r={0.0, -0.5, 0.05}) "link2 c1.r";

  // ---- link3: revolute_c0 on link2.c1, free (k = d = 0), spinning ------------------
  MB.Joints.Revolute link3_joint(
    useAxisFlange=false, n={0.0, 0.3, 1.0},
    phi(fixed=true, start=0),
    w(fixed=true, start=6.0)) "link3 axis, q0 = 0, qd0 = 6 rad/s";
  MB.Parts.Body link3(
    m=0.5, r_CM={0.0, -0.15, 0.0},
    I_11=0.03, I_22=0.02, I_33=0.03, I_21=0, I_31=0, I_32=0) "link3 body";

  // ---- outputs: the system file's `record` list, in order -------------------------
  output Real bus_p_m_13(unit="m") "bus.p.m[13], [IP]_Rb x";
  output Real bus_p_m_14(unit="m") "bus.p.m[14], [IP]_Rb y";
  output Real bus_p_m_15(unit="m") "bus.p.m[15], [IP]_Rb z";
  output Real bus_p_m_16(unit="rad") "bus.p.m[16], phi";
  output Real bus_p_m_17(unit="rad") "bus.p.m[17], theta";
  output Real bus_p_m_18(unit="rad") "bus.p.m[18], psi";
  output Real bus_p_m_10(unit="rad/s") "bus.p.m[10], omega x in R_b";
  output Real bus_p_m_11(unit="rad/s") "bus.p.m[11], omega y in R_b";
  output Real bus_p_m_12(unit="rad/s") "bus.p.m[12], omega z in R_b";
  output Real panel_joint_q_3(unit="rad") "panel.joint.q[3]";
  output Real panel_joint_q_2(unit="rad/s") "panel.joint.q[2]";
  output Real slider_joint_q_3(unit="m") "slider.joint.q[3]";
  output Real slider_joint_q_2(unit="m/s") "slider.joint.q[2]";
  output Real link1_joint_q_3(unit="rad") "link1.joint.q[3]";
  output Real link2_joint_q_3(unit="rad") "link2.joint.q[3]";
  output Real link3_joint_q_3(unit="rad") "link3.joint.q[3]";
  output Real link3_joint_q_2(unit="rad/s") "link3.joint.q[2]";
  // inertial outputs (docs/system-files.md, "Recording outputs"), in R_i
  output Real bus_com_position_1(unit="m") "bus.com.position[1]: centre of mass of the bus";
  output Real bus_com_position_2(unit="m") "bus.com.position[2]";
  output Real bus_com_position_3(unit="m") "bus.com.position[3]";
  output Real boom_dcm_1(unit="1") "boom.dcm[1]: P_b/i of the boom, row by row";
  output Real boom_dcm_2(unit="1") "boom.dcm[2]";
  output Real boom_dcm_3(unit="1") "boom.dcm[3]";
  output Real boom_dcm_4(unit="1") "boom.dcm[4]";
  output Real boom_dcm_5(unit="1") "boom.dcm[5]";
  output Real boom_dcm_6(unit="1") "boom.dcm[6]";
  output Real boom_dcm_7(unit="1") "boom.dcm[7]";
  output Real boom_dcm_8(unit="1") "boom.dcm[8]";
  output Real boom_dcm_9(unit="1") "boom.dcm[9]";
  output Real panel_com_velocity_1(unit="m/s") "panel.com.velocity[1]: velocity of the panel's centre of mass";
  output Real panel_com_velocity_2(unit="m/s") "panel.com.velocity[2]";
  output Real panel_com_velocity_3(unit="m/s") "panel.com.velocity[3]";
  output Real panel_com_velocity_4(unit="rad/s") "panel.com.velocity[4]: angular velocity of the panel";
  output Real panel_com_velocity_5(unit="rad/s") "panel.com.velocity[5]";
  output Real panel_com_velocity_6(unit="rad/s") "panel.com.velocity[6]";
  output Real slider_c1_position_1(unit="m") "slider.c1.position[1]: the slider's child point C1";
  output Real slider_c1_position_2(unit="m") "slider.c1.position[2]";
  output Real slider_c1_position_3(unit="m") "slider.c1.position[3]";
  output Real link3_com_position_1(unit="m") "link3.com.position[1]: centre of mass of link3";
  output Real link3_com_position_2(unit="m") "link3.com.position[2]";
  output Real link3_com_position_3(unit="m") "link3.com.position[3]";
  output Real link3_euler_1(unit="rad") "link3.euler[1]: 3-2-1 Euler angles of link3, phi";
  output Real link3_euler_2(unit="rad") "link3.euler[2], theta";
  output Real link3_euler_3(unit="rad") "link3.euler[3], psi";

protected
  Real P_bi[3, 3] "DCM of the bus, axes as columns, in R_i";
  Real IP_b[3](each unit="m") "[IP]_Rb";
  Real P_boom[3, 3] "DCM of the boom, axes as columns, in R_i";
  Real P_panel[3, 3] "DCM of the panel";
  Real P_link3[3, 3] "DCM of link3";
  Real r_bus_com[3](each unit="m") "centre of mass of the bus, in R_i";
  Real v_panel_com[3](each unit="m/s") "velocity of the panel's centre of mass, in R_i";
  Real w_panel[3](each unit="rad/s") "angular velocity of the panel, in R_i";
  Real r_link3_com[3](each unit="m") "centre of mass of link3, in R_i";

equation
  connect(bus.frame_a, thrusters.frame_b);
  connect(bus.frame_a, bus_c1.frame_a);
  connect(bus.frame_a, bus_c2.frame_a);

  connect(bus_c1.frame_b, boom_mount.frame_a);
  connect(boom_mount.frame_b, boom.frame_a);
  connect(boom_mount.frame_b, boom_c1.frame_a);

  connect(boom_c1.frame_b, panel_joint.frame_a);
  connect(panel_joint.frame_b, panel.frame_a);
  connect(panel_damper.flange_a, panel_joint.support);
  connect(panel_damper.flange_b, panel_joint.axis);

  connect(bus_c2.frame_b, slider_joint.frame_a);
  connect(slider_joint.frame_b, slider.frame_a);
  connect(slider_joint.frame_b, slider_c1.frame_a);
  connect(slider_spring.flange_a, slider_joint.support);
  connect(slider_spring.flange_b, slider_joint.axis);

  connect(slider_c1.frame_b, link1_joint.frame_a);
  connect(link1_joint.frame_b, link1.frame_a);
  connect(link1_joint.frame_b, link1_c1.frame_a);
  connect(link1_damper.flange_a, link1_joint.support);
  connect(link1_damper.flange_b, link1_joint.axis);

  connect(link1_c1.frame_b, link2_joint.frame_a);
  connect(link2_joint.frame_b, link2.frame_a);
  connect(link2_joint.frame_b, link2_c1.frame_a);
  connect(link2_damper.flange_a, link2_joint.support);
  connect(link2_damper.flange_b, link2_joint.axis);

  connect(link2_c1.frame_b, link3_joint.frame_a);
  connect(link3_joint.frame_b, link3.frame_a);

  IP_b = bus.frame_a.R.T*bus.frame_a.r_0;
  bus_p_m_13 = IP_b[1];
  bus_p_m_14 = IP_b[2];
  bus_p_m_15 = IP_b[3];

  P_bi = transpose(bus.frame_a.R.T);
  bus_p_m_17 = atan2(-P_bi[3, 1], sqrt(P_bi[1, 1]^2 + P_bi[2, 1]^2));
  bus_p_m_16 = atan2(P_bi[3, 2], P_bi[3, 3]);
  bus_p_m_18 = atan2(P_bi[2, 1], P_bi[1, 1]);

  bus_p_m_10 = bus.w_a[1];
  bus_p_m_11 = bus.w_a[2];
  bus_p_m_12 = bus.w_a[3];

  panel_joint_q_3 = panel_joint.phi;
  panel_joint_q_2 = panel_joint.w;
  slider_joint_q_3 = slider_joint.s;
  slider_joint_q_2 = slider_joint.v;
  link1_joint_q_3 = link1_joint.phi;
  link2_joint_q_3 = link2_joint.phi;
  link3_joint_q_3 = link3_joint.phi;

  // a point X of a body with frame_a at P: [IX]_Ri = r_0 + P_b/i [PX]_Rb, P_b/i = transpose(R.T);
  // its velocity v_0 + P_b/i (w_a x [PX]_Rb) (v_0 = der(r_0), w_a resolved in frame_a)
  r_bus_com = bus.frame_a.r_0 + P_bi*{0.05, -0.02, 0.1};
  bus_com_position_1 = r_bus_com[1];
  bus_com_position_2 = r_bus_com[2];
  bus_com_position_3 = r_bus_com[3];

  P_boom = transpose(boom.frame_a.R.T);
  boom_dcm_1 = P_boom[1, 1];
  boom_dcm_2 = P_boom[1, 2];
  boom_dcm_3 = P_boom[1, 3];
  boom_dcm_4 = P_boom[2, 1];
  boom_dcm_5 = P_boom[2, 2];
  boom_dcm_6 = P_boom[2, 3];
  boom_dcm_7 = P_boom[3, 1];
  boom_dcm_8 = P_boom[3, 2];
  boom_dcm_9 = P_boom[3, 3];

  P_panel = transpose(panel.frame_a.R.T);
  v_panel_com = panel.v_0 + P_panel*cross(panel.w_a, {0.4, -0.1, 0.05});
  w_panel = P_panel*panel.w_a;
  panel_com_velocity_1 = v_panel_com[1];
  panel_com_velocity_2 = v_panel_com[2];
  panel_com_velocity_3 = v_panel_com[3];
  panel_com_velocity_4 = w_panel[1];
  panel_com_velocity_5 = w_panel[2];
  panel_com_velocity_6 = w_panel[3];

  slider_c1_position_1 = slider_c1.frame_b.r_0[1];
  slider_c1_position_2 = slider_c1.frame_b.r_0[2];
  slider_c1_position_3 = slider_c1.frame_b.r_0[3];

  P_link3 = transpose(link3.frame_a.R.T);
  r_link3_com = link3.frame_a.r_0 + P_link3*{0.0, -0.15, 0.0};
  link3_com_position_1 = r_link3_com[1];
  link3_com_position_2 = r_link3_com[2];
  link3_com_position_3 = r_link3_com[3];
  link3_euler_2 = atan2(-P_link3[3, 1], sqrt(P_link3[1, 1]^2 + P_link3[2, 1]^2));
  link3_euler_1 = atan2(P_link3[3, 2], P_link3[3, 3]);
  link3_euler_3 = atan2(P_link3[2, 1], P_link3[1, 1]);
  link3_joint_q_2 = link3_joint.w;

  annotation (experiment(StartTime=0, StopTime=20, Interval=0.01, Tolerance=1e-12));
end Spacecraft;
