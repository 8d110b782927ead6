model TwoBranch
  "Modelica MultiBody twin of examples/two_branch.toml: a floating hub with two branches (MSL 4.x)"

  /* ------------------------------------------------------------------------
     Twin of the system file examples/two_branch.toml (TITOP blocks), built
     from Modelica.Mechanics.MultiBody (MSL 4.x) only.  Compare the two with

       python validation/compare_twin.py examples/two_branch.toml validation/modelica/TwoBranch.mo

     Topology (unit names of the system file; links child port -> parent port)
       hub   floating_base_c2   free body, the root of the tree
        |- c1 -> arm    revolute_c0   pendulum about z
        |- c2 -> boom   welded_c2     rigid appendage, mounted at (30, 0, 10) deg
                  |- c1 -> pend  revolute_c1 -> c1 -> tip  revolute_c0 (oblique axis [1,0,1])
                  |- c2 -> slide prismatic_c0 along y, spring k and damper d
       Buoyancy on the hub carries the total weight, 14.5 kg * 9.81 m/s2.

     Convention mapping, TITOP block parameter -> MSL component
     - World: TITOP `gravity = [0, -9.81, 0]` in R_i -> World(g = 9.81,
       n = {0,-1,0}) (MSL default g is 9.80665: set explicitly).  R_i = MSL
       world frame.
     - Body frame R_a and port point P: every TITOP block's data (`com`,
       `inertia`, child points `ci.r`) are given from the block's port point
       P in the block's frame R_a.  Here each block is a Parts.Body whose
       frame_a is at P with the axes of R_a:
         `com` = [PB]       -> Body.r_CM (from frame_a, resolved in frame_a)
         `inertia` at B, R_a -> Body.I_11 .. I_32 (at the centre of mass,
                               resolved in frame_a; I_21 = inertia[2][1],
                               I_31 = inertia[3][1], I_32 = inertia[3][2])
         `ci.r` = [PC_i]    -> Parts.FixedTranslation(r = ci.r) from frame_a;
                               the child's joint is connected to its frame_b.
     - Mount (welded, revolute and prismatic blocks): `mount = [phi, theta, psi]`
       are 3-2-1 Euler angles of R_a (at zero joint motion) w.r.t. the parent
       frame R_b: P_a0/b = Rz(psi) Ry(theta) Rx(phi) (columns = axes of R_a
       in R_b).  MSL: Parts.FixedRotation(rotationType = PlanarRotationSequence,
       sequence = {3,2,1}, angles = {psi, theta, phi}) IN DEGREES (MSL's
       `angles` are Angle_deg) and in rotation order: the parent frame turned
       about its z by psi, then about the new y by theta, then the new x by
       phi, which is the same intrinsic z-y-x sequence.  The boom's mount
       ["30 deg", "0 deg", "10 deg"] is therefore angles = {10, 0, 30}.
       The rotation sits at the parent's child point (after the
       FixedTranslation of that point), before the joint: TITOP's eq. (16)
       P_a/b = P_a0/b e^{theta (*r~)} is "mount, then joint".
     - Revolute joint: `axis` = [r]_Ra (normalised by the block) ->
       Joints.Revolute(n = axis) (MSL normalises n too); `q0` -> phi(start,
       fixed), `qd0` -> w(start, fixed); frame_b = frame_a turned by phi
       about n (right-hand rule), the same as TITOP's e^{theta (*r~)}.
       The tip's oblique axis [1,0,1] is used as is on both sides.
     - Prismatic joint: `axis` = [t]_Ra -> Joints.Prismatic(n = axis), s = x,
       frame_b = frame_a + s*n/|n| with the same axes: TITOP's P = P0 + x t~.
     - Joint spring and damper: TITOP adds -k q - d qdot to joint.tau.  MSL:
       a 1-D element between the joint's support and axis flanges
       (useAxisFlange = true): Translational.Components.SpringDamper(c = k,
       d = d, s_rel0 = 0) for the prismatic joint, Rotational.Components.Damper
       (d = d) for the revolutes; with flange_a on the support and flange_b on
       the axis, the element pushes the axis with -(c s_rel + d v_rel),
       s_rel = q.
     - Floating base: `floating_base` with `r0 = 0`, `Theta0 = 0`, `twist0 = 0`
       (defaults) -> the hub's Parts.Body is connected to no joint: it is the
       root; its r_0, v_0, orientation (quaternions) and w are states, fixed
       at zero.  TITOP's twist is at P in R_b; the MSL start values are in the
       world frame, identical at rest.  enforceStates = true (rumoca needs it
       on a free root body to pick it as the orientation root).
     - External wrench: [inputs] "hub.ext.w" = [F; T_P] at P in R_i
       (ext_frame = 0, the default) -> Forces.WorldForce at hub.frame_a,
       resolveInFrame = world, force = F (T_P = 0, so no WorldTorque).
     - Outputs, named after the `record` entries of the system file
       ("." and "[k]" become "_" and "_k": "arm.joint.q[3]" -> arm_joint_q_3):
         <joint>.joint.q[3] = q          -> Revolute.phi / Prismatic.s
         hub.c1.m[13..15] = [I C1]_Rb   position of the hub's child point
                             c1 projected in the hub frame: frame.R.T*r_0
                             (R.T maps world to frame coordinates)
         hub.c1.m[16..18] = Theta        3-2-1 Euler angles of the hub,
                             from P_b/i = transpose(R.T) as in BalloonSystem.mo
                             (theta in [-pi/2, pi/2], phi and psi by atan2).
         inertial outputs, in R_i (a point X of a body whose frame_a is at P):
         <body>.<X>.position = [IX]_Ri  -> frame_a.r_0 + P_b/i*[PX]_Rb
         <body>.<X>.velocity = [v_X; omega]_Ri -> v_0 + P_b/i*cross(w_a, [PX]_Rb)
                             and P_b/i*w_a (v_0 = der(r_0), w_a resolved in frame_a)
         <body>.dcm[1..9]  = P_b/i row by row, P_b/i = transpose(frame_a.R.T)
     Bodies are massive rigid bodies (not point masses) with small inertias,
     exactly as in the system file.
     ------------------------------------------------------------------------ */

  import MB = Modelica.Mechanics.MultiBody;

  parameter Real g(unit="m/s2") = 9.81 "Gravity acceleration along -y";
  parameter Real F_buoy[3](each unit="N") = {0, 142.245, 0} "hub.ext.w force, in R_i";

  inner MB.World world(g=g, n={0, -1, 0}, enableAnimation=false) "R_i, y up";

  // ---- hub: floating_base_c2 ------------------------------------------------
  MB.Parts.Body hub(
    m=6.0, r_CM={0, 0, 0},
    I_11=2.0, I_22=3.0, I_33=2.5, I_21=0.1, I_31=0.0, I_32=0.2,
    useQuaternions=true, enforceStates=true,
    r_0(start={0, 0, 0}, each fixed=true),
    v_0(start={0, 0, 0}, each fixed=true),
    angles_fixed=true, angles_start={0, 0, 0},
    w_0_fixed=true, w_0_start={0, 0, 0}) "hub, frame_a at its port point P";
  MB.Forces.WorldForce buoyancy(
    resolveInFrame=MB.Types.ResolveInFrameB.world, force=F_buoy) "hub.ext.w";
  MB.Parts.FixedTranslation hub_c1(r={0.5, -0.5, 0.0}) "hub c1.r";
  MB.Parts.FixedTranslation hub_c2(r={-0.5, -0.3, 0.2}) "hub c2.r";

  // ---- arm: revolute_c0 on hub.c1 -------------------------------------------
  MB.Joints.Revolute arm_joint(
    useAxisFlange=true, n={0, 0, 1},
    phi(fixed=true, start=Modelica.Units.Conversions.from_deg(40)),
    w(fixed=true, start=0)) "arm axis, q0 = 40 deg";
  Modelica.Mechanics.Rotational.Components.Damper arm_damper(d=0.5) "arm d";
  MB.Parts.Body arm(
    m=1.5, r_CM={0, -0.8, 0},
    I_11=0.01, I_22=0.01, I_33=0.01, I_21=0, I_31=0, I_32=0) "arm body";

  // ---- boom: welded_c2 on hub.c2, mount (30, 0, 10) deg -----------------------
  MB.Parts.FixedRotation boom_mount(
    rotationType=MB.Types.RotationTypes.PlanarRotationSequence,
    sequence={3, 2, 1}, angles={10, 0, 30}) "mount [phi, theta, psi] = [30, 0, 10] deg";
  MB.Parts.Body boom(
    m=2.0, r_CM={-0.5, 0, 0},
    I_11=0.05, I_22=0.2, I_33=0.2, I_21=0, I_31=0, I_32=0) "boom body";
  MB.Parts.FixedTranslation boom_c1(r={-1.0, 0.0, 0.0}) "boom c1.r";
  MB.Parts.FixedTranslation boom_c2(r={-0.6, 0.0, 0.3}) "boom c2.r";

  // ---- pend: revolute_c1 on boom.c1 -------------------------------------------
  MB.Joints.Revolute pend_joint(
    useAxisFlange=true, n={0, 0, 1},
    phi(fixed=true, start=Modelica.Units.Conversions.from_deg(70)),
    w(fixed=true, start=0)) "pend axis, q0 = 70 deg";
  Modelica.Mechanics.Rotational.Components.Damper pend_damper(d=0.4) "pend d";
  MB.Parts.Body pend(
    m=1.0, r_CM={0, -0.6, 0},
    I_11=0.005, I_22=0.005, I_33=0.005, I_21=0, I_31=0, I_32=0) "pend body";
  MB.Parts.FixedTranslation pend_c1(r={0.0, -0.6, 0.0}) "pend c1.r";

  // ---- tip: revolute_c0 on pend.c1, oblique axis ------------------------------
  MB.Joints.Revolute tip_joint(
    useAxisFlange=true, n={1, 0, 1},
    phi(fixed=true, start=Modelica.Units.Conversions.from_deg(-30)),
    w(fixed=true, start=0)) "tip axis [1,0,1], q0 = -30 deg";
  Modelica.Mechanics.Rotational.Components.Damper tip_damper(d=0.2) "tip d";
  MB.Parts.Body tip(
    m=0.8, r_CM={0, -0.5, 0},
    I_11=0.002, I_22=0.002, I_33=0.002, I_21=0, I_31=0, I_32=0) "tip body";

  // ---- slide: prismatic_c0 on boom.c2 -----------------------------------------
  MB.Joints.Prismatic slide_joint(
    useAxisFlange=true, n={0, 1, 0},
    s(fixed=true, start=0.1),
    v(fixed=true, start=0)) "slide axis, q0 = 0.1 m";
  Modelica.Mechanics.Translational.Components.SpringDamper slide_spring(
    c=80.0, d=4.0, s_rel0=0) "slide k, d";
  MB.Parts.Body slide(
    m=3.2, r_CM={0, 0, 0},
    I_11=0.01, I_22=0.01, I_33=0.01, I_21=0, I_31=0, I_32=0) "slide body";

  // ---- outputs: the system file's `record` list, in order ---------------------
  output Real arm_joint_q_3(unit="rad") "arm.joint.q[3]";
  output Real pend_joint_q_3(unit="rad") "pend.joint.q[3]";
  output Real tip_joint_q_3(unit="rad") "tip.joint.q[3]";
  output Real slide_joint_q_3(unit="m") "slide.joint.q[3]";
  output Real hub_c1_m_13(unit="m") "hub.c1.m[13]";
  output Real hub_c1_m_14(unit="m") "hub.c1.m[14]";
  output Real hub_c1_m_15(unit="m") "hub.c1.m[15]";
  output Real hub_c1_m_16(unit="rad") "hub.c1.m[16], phi";
  output Real hub_c1_m_17(unit="rad") "hub.c1.m[17], theta";
  output Real hub_c1_m_18(unit="rad") "hub.c1.m[18], psi";
  // inertial outputs (docs/system-files.md, "Recording outputs"), in R_i
  output Real tip_com_position_1(unit="m") "tip.com.position[1]: centre of mass of the tip";
  output Real tip_com_position_2(unit="m") "tip.com.position[2]";
  output Real tip_com_position_3(unit="m") "tip.com.position[3]";
  output Real slide_p_position_1(unit="m") "slide.p.position[1]: the slide's port point, P0 + q t";
  output Real slide_p_position_2(unit="m") "slide.p.position[2]";
  output Real slide_p_position_3(unit="m") "slide.p.position[3]";
  output Real pend_c1_velocity_1(unit="m/s") "pend.c1.velocity[1]: velocity of pend's child point C1";
  output Real pend_c1_velocity_2(unit="m/s") "pend.c1.velocity[2]";
  output Real pend_c1_velocity_3(unit="m/s") "pend.c1.velocity[3]";
  output Real pend_c1_velocity_4(unit="rad/s") "pend.c1.velocity[4]: angular velocity of pend";
  output Real pend_c1_velocity_5(unit="rad/s") "pend.c1.velocity[5]";
  output Real pend_c1_velocity_6(unit="rad/s") "pend.c1.velocity[6]";
  output Real boom_dcm_1(unit="1") "boom.dcm[1]: P_b/i of the boom, row by row";
  output Real boom_dcm_2(unit="1") "boom.dcm[2]";
  output Real boom_dcm_3(unit="1") "boom.dcm[3]";
  output Real boom_dcm_4(unit="1") "boom.dcm[4]";
  output Real boom_dcm_5(unit="1") "boom.dcm[5]";
  output Real boom_dcm_6(unit="1") "boom.dcm[6]";
  output Real boom_dcm_7(unit="1") "boom.dcm[7]";
  output Real boom_dcm_8(unit="1") "boom.dcm[8]";
  output Real boom_dcm_9(unit="1") "boom.dcm[9]";

protected
  Real P_bi[3, 3] "DCM of the hub, axes as columns, in R_i";
  Real IC1_b[3](each unit="m") "[I C1]_Rb";
  Real P_tip[3, 3] "DCM of the tip, axes as columns, in R_i";
  Real P_pend[3, 3] "DCM of pend";
  Real P_boom[3, 3] "DCM of the boom";
  Real r_tip_com[3](each unit="m") "centre of mass of the tip, in R_i";
  Real v_pend_c1[3](each unit="m/s") "velocity of pend's C1, in R_i";
  Real w_pend[3](each unit="rad/s") "angular velocity of pend, in R_i";

equation
  connect(hub.frame_a, buoyancy.frame_b);
  connect(hub.frame_a, hub_c1.frame_a);
  connect(hub.frame_a, hub_c2.frame_a);

  connect(hub_c1.frame_b, arm_joint.frame_a);
  connect(arm_joint.frame_b, arm.frame_a);
  connect(arm_damper.flange_a, arm_joint.support);
  connect(arm_damper.flange_b, arm_joint.axis);

  connect(hub_c2.frame_b, boom_mount.frame_a);
  connect(boom_mount.frame_b, boom.frame_a);
  connect(boom_mount.frame_b, boom_c1.frame_a);
  connect(boom_mount.frame_b, boom_c2.frame_a);

  connect(boom_c1.frame_b, pend_joint.frame_a);
  connect(pend_joint.frame_b, pend.frame_a);
  connect(pend_joint.frame_b, pend_c1.frame_a);
  connect(pend_damper.flange_a, pend_joint.support);
  connect(pend_damper.flange_b, pend_joint.axis);

  connect(pend_c1.frame_b, tip_joint.frame_a);
  connect(tip_joint.frame_b, tip.frame_a);
  connect(tip_damper.flange_a, tip_joint.support);
  connect(tip_damper.flange_b, tip_joint.axis);

  connect(boom_c2.frame_b, slide_joint.frame_a);
  connect(slide_joint.frame_b, slide.frame_a);
  connect(slide_spring.flange_a, slide_joint.support);
  connect(slide_spring.flange_b, slide_joint.axis);

  arm_joint_q_3 = arm_joint.phi;
  pend_joint_q_3 = pend_joint.phi;
  tip_joint_q_3 = tip_joint.phi;
  slide_joint_q_3 = slide_joint.s;

  IC1_b = hub_c1.frame_b.R.T*hub_c1.frame_b.r_0;
  hub_c1_m_13 = IC1_b[1];
  hub_c1_m_14 = IC1_b[2];
  hub_c1_m_15 = IC1_b[3];

  P_bi = transpose(hub.frame_a.R.T);
  hub_c1_m_17 = atan2(-P_bi[3, 1], sqrt(P_bi[1, 1]^2 + P_bi[2, 1]^2));
  hub_c1_m_16 = atan2(P_bi[3, 2], P_bi[3, 3]);
  hub_c1_m_18 = atan2(P_bi[2, 1], P_bi[1, 1]);

  // a point X of a body with frame_a at P: [IX]_Ri = r_0 + P_b/i [PX]_Rb, P_b/i = transpose(R.T);
  // its velocity v_0 + P_b/i (w_a x [PX]_Rb) (v_0 = der(r_0), w_a resolved in frame_a)
  P_tip = transpose(tip.frame_a.R.T);
  r_tip_com = tip.frame_a.r_0 + P_tip*{0.0, -0.5, 0.0};
  tip_com_position_1 = r_tip_com[1];
  tip_com_position_2 = r_tip_com[2];
  tip_com_position_3 = r_tip_com[3];

  slide_p_position_1 = slide.frame_a.r_0[1];
  slide_p_position_2 = slide.frame_a.r_0[2];
  slide_p_position_3 = slide.frame_a.r_0[3];

  P_pend = transpose(pend.frame_a.R.T);
  v_pend_c1 = pend.v_0 + P_pend*cross(pend.w_a, {0.0, -0.6, 0.0});
  w_pend = P_pend*pend.w_a;
  pend_c1_velocity_1 = v_pend_c1[1];
  pend_c1_velocity_2 = v_pend_c1[2];
  pend_c1_velocity_3 = v_pend_c1[3];
  pend_c1_velocity_4 = w_pend[1];
  pend_c1_velocity_5 = w_pend[2];
  pend_c1_velocity_6 = w_pend[3];

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

  annotation (experiment(StartTime=0, StopTime=10, Interval=0.01, Tolerance=1e-12));
end TwoBranch;
